// The autoscaling signal model-free: demand smoothing, capacity learnt from saturation,
// and recommended = ceil(demand / capacity).
#include "router/capacity.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::router {
namespace {

TEST(CapacityTest, LearnsCapacityFromASaturatedReplica) {
  CapacityEstimator c({10, 0});
  EXPECT_EQ(c.recommended(), 0u);  // nothing known
  c.observe_replica("a", 3, 0);    // running 3, nothing waiting: a lower bound only
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 3);
  c.observe_replica("a", 8, 2);  // 8 running while 2 wait: saturated at 8
  c.observe_replica("a", 5, 0);
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 8);
  c.observe_replica("b", 6, 1);
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 7);  // mean of 8 and 6
  c.forget_replica("b");
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 8);
}

TEST(CapacityTest, DefaultCapacityUntilSaturationIsSeen) {
  CapacityEstimator c({10, 4});
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 4);
  c.observe_replica("a", 2, 0);
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 4);
  c.observe_replica("a", 6, 3);
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 6);
}

TEST(CapacityTest, RecommendsCeilOfSmoothedDemandOverCapacity) {
  CapacityEstimator c({10, 4});
  c.observe_demand(0, 0);
  EXPECT_EQ(c.recommended(), 1u);  // at least one
  // A step to 20 held requests: after five time constants the EWMA is within 1%.
  for (int t = 1; t <= 50; ++t) c.observe_demand(t, 20);
  EXPECT_NEAR(c.demand(), 20, 0.2);
  EXPECT_EQ(c.recommended(), 5u);  // ceil(19.9 / 4)
  // One time constant after a step up the EWMA has gone 1 - 1/e of the way.
  CapacityEstimator d({10, 4});
  d.observe_demand(0, 0);
  d.observe_demand(10, 10);
  EXPECT_NEAR(d.demand(), 10 * (1 - 0.36787944), 1e-6);
  EXPECT_EQ(d.recommended(), 2u);  // ceil(6.32 / 4)
}

TEST(CapacityTest, IgnoresBadSamplesAndRejectsBadConfig) {
  CapacityEstimator c({10, 0});
  c.observe_replica("a", -1, 5);
  c.observe_replica("a", std::nan(""), 5);
  EXPECT_DOUBLE_EQ(c.per_replica_capacity(), 0);
  EXPECT_ANY_THROW(CapacityEstimator({0, 0}));
  EXPECT_ANY_THROW(CapacityEstimator({10, -1}));
}

}  // namespace
}  // namespace strata::router
