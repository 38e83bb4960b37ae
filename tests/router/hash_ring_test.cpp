// CHWBL model-free: exact assignments on a fixed ring, and the load bound.
#include "router/hash_ring.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "router/policy.h"

namespace strata::router {
namespace {

const std::vector<std::string> kNames = {"http://a:1", "http://b:2", "http://c:3"};

TEST(HashRingTest, CapacityIsCeilOfFactorTimesMeanPlusOne) {
  EXPECT_EQ(chwbl_capacity(0, 3, 1.25), 1u);   // ceil(1.25 * 1 / 3)
  EXPECT_EQ(chwbl_capacity(5, 3, 1.25), 3u);   // ceil(1.25 * 6 / 3) = ceil(2.5)
  EXPECT_EQ(chwbl_capacity(11, 3, 1.25), 5u);  // ceil(5)
  EXPECT_EQ(chwbl_capacity(11, 3, 1.0), 4u);
  EXPECT_EQ(chwbl_capacity(7, 0, 1.25), 0u);
  EXPECT_EQ(chwbl_capacity(7, 3, HashRing::kUnbounded), UINT64_MAX);
}

// A ring of one point per replica is small enough to reason about by hand: the home of
// a key is the first point at or after it, and a full home hands over clockwise.
TEST(HashRingTest, ExactAssignmentsOnAFixedRing) {
  const HashRing ring(kNames, 1);
  ASSERT_EQ(ring.points(), 3u);
  const std::vector<bool> all(3, true);
  // Order of the three points on the ring, found through the keys just above each.
  std::vector<size_t> owners;
  for (uint64_t probe : {uint64_t{0}, uint64_t{UINT64_MAX}})
    owners.push_back(*ring.home(probe, all));
  // Key 0 and key UINT64_MAX both wrap to the first point: the same replica.
  EXPECT_EQ(owners[0], owners[1]);
  // Every key has a home, and homes are stable across calls.
  for (uint64_t k = 1; k < 1000000007ull * 50; k += 1000000007ull)
    EXPECT_EQ(ring.home(k, all), ring.home(k, all));
  // Bounded load with loads {L0, L1, L2}: the home takes it while load + 1 <= capacity.
  const uint64_t key = 12345;
  const size_t h = *ring.home(key, all);
  std::vector<uint32_t> loads = {0, 0, 0};
  EXPECT_EQ(ring.pick(key, loads, all, 1.25), h);  // capacity 1, load 0 fits
  loads[h] = 1;                                    // total 1: capacity ceil(2.5/3) = 1
  const size_t next = *ring.pick(key, loads, all, 1.25);
  EXPECT_NE(next, h);
  // With c = infinity the home keeps it whatever its load.
  loads[h] = 100;
  EXPECT_EQ(ring.pick(key, loads, all, HashRing::kUnbounded), h);
  // An ineligible home hands over to the same replica the walk gives.
  std::vector<bool> without_home = all;
  without_home[h] = false;
  EXPECT_EQ(ring.pick(key, {0, 0, 0}, without_home, 1.25), next);
  EXPECT_EQ(ring.pick(key, {0, 0, 0}, std::vector<bool>(3, false), 1.25), std::nullopt);
}

// Exact expectations pinned for the default ring (160 vnodes): recomputed only if the
// ring's hashing changes, which would move every cached prefix in a deployment.
TEST(HashRingTest, PinnedHomesOfTheDefaultRing) {
  const HashRing ring(kNames, 160);
  const std::vector<bool> all(3, true);
  std::vector<size_t> homes;
  // Keys spread over the ring (a multiplicative hash of 1..12).
  for (uint64_t k = 1; k <= 12; ++k) homes.push_back(*ring.home(k * 0x9e3779b97f4a7c15ull, all));
  const std::vector<size_t> expected = {0, 1, 2, 0, 1, 0, 0, 1, 1, 2, 1, 2};
  EXPECT_EQ(homes, expected);
}

// One key sent 300 times while nothing finishes: bounded load keeps every replica within
// ceil(c (m + 1) / n); pure affinity puts all on the home.
TEST(HashRingTest, PopularKeyIsSpreadWithinTheBound) {
  const HashRing ring(kNames, 160);
  const std::vector<bool> all(3, true);
  std::vector<uint32_t> loads = {0, 0, 0};
  for (int i = 0; i < 300; ++i) {
    const size_t r = *ring.pick(777, loads, all, 1.25);
    ++loads[r];
    const uint64_t total = std::accumulate(loads.begin(), loads.end(), 0ull);
    const double mean = static_cast<double>(total) / 3;
    EXPECT_LE(*std::max_element(loads.begin(), loads.end()), 1.25 * mean + 1) << i;
  }
  std::vector<uint32_t> affine = {0, 0, 0};
  for (int i = 0; i < 300; ++i) ++affine[*ring.pick(777, affine, all, HashRing::kUnbounded)];
  EXPECT_EQ(*std::max_element(affine.begin(), affine.end()), 300u);
}

TEST(PolicyTest, RoundRobinSkipsIneligibleAndLeastLoadTakesFewest) {
  Policy rr(PolicyKind::kRoundRobin, kNames, 8, 1.25);
  std::vector<ReplicaLoad> r = {{true, 5}, {false, 0}, {true, 1}};
  EXPECT_EQ(rr.pick(r, std::nullopt), 0u);
  EXPECT_EQ(rr.pick(r, std::nullopt), 2u);
  EXPECT_EQ(rr.pick(r, std::nullopt), 0u);
  Policy ll(PolicyKind::kLeastLoad, kNames, 8, 1.25);
  EXPECT_EQ(ll.pick(r, 99), 2u);
  r[1].eligible = true;
  EXPECT_EQ(ll.pick(r, 99), 1u);
  // Prefix without a key (a prompt shorter than a block): least-load.
  Policy px(PolicyKind::kPrefix, kNames, 8, 1.25);
  EXPECT_EQ(px.pick(r, std::nullopt), 1u);
  EXPECT_THROW(parse_policy("random"), std::exception);
  EXPECT_THROW(Policy(PolicyKind::kPrefix, kNames, 8, 0.5), std::exception);
}

}  // namespace
}  // namespace strata::router
