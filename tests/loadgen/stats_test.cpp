// Percentiles (numpy's default linear interpolation), TPOT, goodput and throughput
// definitions on synthetic timelines; failed requests counted but never in latencies.
#include "loadgen/stats.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "loadgen/report.h"

namespace strata::loadgen {
namespace {

RequestRecord ok(int64_t prompt, int64_t output, double ttft, double e2el,
                 std::vector<double> itl = {}) {
  RequestRecord r;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  r.ttft_s = ttft;
  r.e2el_s = e2el;
  r.itl_s = std::move(itl);
  return r;
}

RequestRecord failed(const std::string& error) {
  RequestRecord r;
  r.error = error;
  r.prompt_tokens = 7;
  return r;
}

TEST(Percentile, MatchesNumpyLinear) {
  // numpy.percentile([1, 2, 3, 4], [0, 25, 50, 90, 99, 100]) = 1, 1.75, 2.5, 3.7, 3.97, 4
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 1.75);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_NEAR(percentile(v, 90), 3.7, 1e-12);
  EXPECT_NEAR(percentile(v, 99), 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  // numpy.percentile([10, 20, 40, 80, 160], 99) = 156.8; 90 -> 128
  const std::vector<double> w = {10, 20, 40, 80, 160};
  EXPECT_NEAR(percentile(w, 99), 156.8, 1e-9);
  EXPECT_NEAR(percentile(w, 90), 128, 1e-9);
  EXPECT_DOUBLE_EQ(percentile({5.0}, 99), 5);
  EXPECT_THROW(percentile({}, 50), Error);
}

TEST(Describe, SortsAndReportsRequestedPercentiles) {
  const auto d = describe({4, 1, 3, 2}, {50, 90, 99.9});
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  ASSERT_EQ(d.percentiles.size(), 3u);
  EXPECT_NEAR(d.percentiles[1].second, 3.7, 1e-12);
  EXPECT_NEAR(d.percentiles[2].second, 3.997, 1e-12);
  EXPECT_EQ(describe({}, {50}).count, 0u);
}

TEST(Stats, TpotIsE2eMinusTtftOverOutputMinusOne) {
  // 5 tokens: first at 100 ms, last at 500 ms -> (500 - 100) / 4 = 100 ms per token.
  const auto r = ok(10, 5, 0.1, 0.5, {0.1, 0.1, 0.1, 0.1});
  ASSERT_TRUE(tpot_s(r));
  EXPECT_NEAR(*tpot_s(r), 0.1, 1e-12);
  EXPECT_FALSE(tpot_s(ok(10, 1, 0.1, 0.1)));  // one token: no TPOT
  EXPECT_FALSE(tpot_s(failed("x")));
}

TEST(Stats, SummaryOnSyntheticTimeline) {
  std::vector<RequestRecord> recs = {
      ok(100, 11, 0.050, 1.050, std::vector<double>(10, 0.1)),   // TPOT 100 ms
      ok(200, 21, 0.100, 0.500, std::vector<double>(20, 0.02)),  // TPOT 20 ms
      ok(50, 1, 0.300, 0.300),                                   // no TPOT, no ITL
      failed("HTTP 429: queue full"),
      failed("HTTP 429: queue full"),
      failed("the stream broke: end of stream"),
  };
  const auto s = summarize(recs, 2.0, {50, 90, 99}, Slo{});
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.failed, 3);
  EXPECT_EQ(s.total_input_tokens, 350);  // failed requests' prompts are not counted
  EXPECT_EQ(s.total_output_tokens, 33);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.output_throughput, 16.5);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 191.5);
  EXPECT_FALSE(s.goodput);
  EXPECT_EQ(s.ttft_ms.count, 3u);
  EXPECT_NEAR(s.ttft_ms.mean, 150, 1e-9);
  EXPECT_NEAR(s.ttft_ms.median, 100, 1e-9);
  EXPECT_EQ(s.tpot_ms.count, 2u);
  EXPECT_NEAR(s.tpot_ms.mean, 60, 1e-9);
  EXPECT_EQ(s.itl_ms.count, 30u);  // pooled over requests
  EXPECT_NEAR(s.itl_ms.median, 20, 1e-9);
  EXPECT_NEAR(s.itl_ms.percentiles[1].second, 100, 1e-9);  // p90 of 20x20 ms, 10x100 ms
  EXPECT_EQ(s.e2el_ms.count, 3u);
  EXPECT_NEAR(s.e2el_ms.median, 500, 1e-9);
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].first, "HTTP 429: queue full");
  EXPECT_EQ(s.errors[0].second, 2);
}

TEST(Stats, GoodputCountsRequestsMeetingEverySlo) {
  std::vector<RequestRecord> recs = {
      ok(1, 11, 0.050, 1.050),  // TTFT 50, TPOT 100, E2E 1050
      ok(1, 21, 0.100, 0.500),  // TTFT 100, TPOT 20, E2E 500
      ok(1, 1, 0.300, 0.300),   // TTFT 300, TPOT 0 (one token), E2E 300
      failed("x"),
  };
  EXPECT_DOUBLE_EQ(*summarize(recs, 2, {50}, parse_slo({"ttft:100"})).goodput, 1.0);
  EXPECT_DOUBLE_EQ(*summarize(recs, 2, {50}, parse_slo({"tpot:50"})).goodput, 1.0);
  EXPECT_DOUBLE_EQ(*summarize(recs, 2, {50}, parse_slo({"tpot:100"})).goodput, 1.5);
  EXPECT_DOUBLE_EQ(*summarize(recs, 2, {50}, parse_slo({"ttft:100", "tpot:50"})).goodput, 0.5);
  EXPECT_DOUBLE_EQ(*summarize(recs, 2, {50}, parse_slo({"e2el:600"})).goodput, 1.0);
  EXPECT_DOUBLE_EQ(*summarize(recs, 4, {50}, parse_slo({"e2el:5000"})).goodput, 0.75);
}

TEST(Stats, AllFailedLeavesEmptyDistributions) {
  const auto s = summarize({failed("a"), failed("b")}, 1.0, {50, 99}, Slo{});
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.ttft_ms.count, 0u);
  const auto j = summary_json(s);
  EXPECT_TRUE(j["ttft_ms"]["mean"].is_null());
  EXPECT_TRUE(j["ttft_ms"]["p99"].is_null());
  EXPECT_TRUE(j["goodput"].is_null());
  EXPECT_NE(summary_table(s).find("Failed requests:                         2"), std::string::npos);
}

TEST(Stats, ParseSloAndPercentiles) {
  const Slo slo = parse_slo({"ttft:200", "e2el:1000.5"});
  EXPECT_EQ(*slo.ttft_ms, 200);
  EXPECT_FALSE(slo.tpot_ms);
  EXPECT_EQ(*slo.e2el_ms, 1000.5);
  EXPECT_THROW(parse_slo({"ttft"}), Error);
  EXPECT_THROW(parse_slo({"latency:5"}), Error);
  EXPECT_THROW(parse_slo({"ttft:abc"}), Error);
  EXPECT_THROW(parse_slo({"ttft:1", "ttft:2"}), Error);
  EXPECT_EQ(parse_percentiles("50,90,99"), (std::vector<double>{50, 90, 99}));
  EXPECT_EQ(parse_percentiles("99.9"), (std::vector<double>{99.9}));
  EXPECT_THROW(parse_percentiles("101"), Error);
  EXPECT_THROW(parse_percentiles("x"), Error);
  EXPECT_EQ(percentile_key(90), "p90");
  EXPECT_EQ(percentile_key(99.9), "p99.9");
}

TEST(Stats, ThroughputTimelineSpreadsTokensOverChunks) {
  RequestRecord r = ok(1, 4, 0.5, 1.7, {0.4, 0.4, 0.4});  // chunks at 0.5, 0.9, 1.3, 1.7
  r.start_s = 0;
  RequestRecord late = ok(1, 2, 0.1, 0.2, {0.1});  // sent at 2.0: chunks at 2.1, 2.2
  late.start_s = 2.0;
  const auto bins = throughput_timeline({r, late, failed("x")}, 1.0);
  ASSERT_EQ(bins.size(), 3u);
  EXPECT_DOUBLE_EQ(bins[0], 2);
  EXPECT_DOUBLE_EQ(bins[1], 2);
  EXPECT_DOUBLE_EQ(bins[2], 2);
}

}  // namespace
}  // namespace strata::loadgen
