// Scraping a replica's /metrics model-free.
#include "router/replica_metrics.h"

#include <gtest/gtest.h>

namespace strata::router {
namespace {

TEST(ReplicaMetricsTest, ReadsTheEngineGauges) {
  const auto g = parse_replica_metrics(
      "# HELP strata:num_requests_running Sequences.\n"
      "# TYPE strata:num_requests_running gauge\n"
      "strata:num_requests_running 3\n"
      "strata:num_requests_waiting 2\n"
      "strata:prefix_cache_queries_total 4096\n"
      "strata:prefix_cache_hits_total 1024\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->running, 3);
  EXPECT_EQ(g->waiting, 2);
  EXPECT_EQ(g->prefix_query_tokens, 4096);
  EXPECT_EQ(g->prefix_hit_tokens, 1024);
}

TEST(ReplicaMetricsTest, HostileTextGivesNothing) {
  EXPECT_FALSE(parse_replica_metrics(""));
  EXPECT_FALSE(parse_replica_metrics("strata:num_requests_running 3\n"));
  EXPECT_FALSE(
      parse_replica_metrics("strata:num_requests_running x\nstrata:num_requests_waiting 1"));
  EXPECT_FALSE(
      parse_replica_metrics("strata:num_requests_running inf\nstrata:num_requests_waiting 1"));
  EXPECT_FALSE(
      parse_replica_metrics("xstrata:num_requests_running 1\nstrata:num_requests_waiting 1"));
  EXPECT_TRUE(
      parse_replica_metrics("strata:num_requests_running 1\nstrata:num_requests_waiting 0"));
}

}  // namespace
}  // namespace strata::router
