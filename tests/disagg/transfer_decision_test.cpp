// The transfer-vs-recompute rule (disagg/transfer_decision.h).
#include "disagg/transfer_decision.h"

#include <gtest/gtest.h>

namespace strata::disagg {
namespace {

TEST(TransferDecision, ComparesTransferTimeWithRecomputeTime) {
  // 1 MB over 1 GB/s = 1 ms; 1000 tokens at 100k tok/s = 10 ms: transfer.
  auto d = decide_transfer(1'000'000, 1000, 1e9, 1e5);
  EXPECT_TRUE(d.transfer);
  EXPECT_DOUBLE_EQ(d.transfer_s, 1e-3);
  EXPECT_DOUBLE_EQ(d.recompute_s, 1e-2);
  // The same over 10 MB/s = 100 ms: recompute.
  d = decide_transfer(1'000'000, 1000, 1e7, 1e5);
  EXPECT_FALSE(d.transfer);
  // Nothing to send, or no rate measured yet.
  EXPECT_FALSE(decide_transfer(0, 0, 1e9, 1e5).transfer);
  d = decide_transfer(1000, 16, 1e9, 0);
  EXPECT_TRUE(d.transfer);
  EXPECT_EQ(d.recompute_s, 0);
}

TEST(TransferRates, AverageTowardsMeasurements) {
  TransferRates r(1e9, 0.5);
  EXPECT_EQ(r.prefill_tokens_per_s(), 0);
  r.observe_send(1000, 1e-3);  // 1 MB/s
  EXPECT_DOUBLE_EQ(r.link_bytes_per_s(), 0.5 * 1e9 + 0.5 * 1e6);
  r.observe_prefill(100, 0.1);
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_s(), 1000);  // the first sample is taken as is
  r.observe_prefill(300, 0.1);
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_s(), 2000);
  r.observe_send(0, 1);  // ignored
  r.observe_prefill(10, 0);
  EXPECT_DOUBLE_EQ(r.prefill_tokens_per_s(), 2000);
}

}  // namespace
}  // namespace strata::disagg
