#include "eval/logit_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "eval/logits_file.h"

namespace strata {
namespace {

TEST(LogitStats, LogSoftmaxAndNllMatchHandComputed) {
  // logits (0, ln 2, ln 1) -> probs (1/4, 2/4, 1/4) after adding ln 1 = 0 to the third.
  const std::vector<float> l = {0.0f, static_cast<float>(std::log(2.0)), 0.0f};
  std::vector<double> lp(3);
  log_softmax(l, lp);
  EXPECT_NEAR(std::exp(lp[0]), 0.25, 1e-7);
  EXPECT_NEAR(std::exp(lp[1]), 0.50, 1e-7);
  EXPECT_NEAR(token_nll(l, 1), std::log(2.0), 1e-7);
  EXPECT_NEAR(token_nll(l, 2), std::log(4.0), 1e-7);
  EXPECT_THROW(token_nll(l, 3), Error);
  // Large logits do not overflow.
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(token_nll(big, 0), std::log(2.0), 1e-9);
}

TEST(LogitStats, KlDivergenceMatchesHandComputed) {
  // P = (1/2, 1/2), Q = (1/4, 3/4): KL = 1/2 ln 2 + 1/2 ln(2/3).
  const std::vector<double> p = {std::log(0.5), std::log(0.5)};
  const std::vector<double> q = {std::log(0.25), std::log(0.75)};
  EXPECT_NEAR(kl_divergence(p, q), 0.5 * std::log(2.0) + 0.5 * std::log(2.0 / 3.0), 1e-12);
  EXPECT_EQ(kl_divergence(p, p), 0.0);
  EXPECT_GT(kl_divergence(q, p), 0.0);
  EXPECT_EQ(argmax(q), 1);
}

TEST(LogitStats, SummaryMedianP99AndPerplexity) {
  std::vector<double> v;
  for (int i = 1; i <= 200; ++i) v.push_back(i);
  const Summary s = summarize(v);
  EXPECT_EQ(s.count, 200);
  EXPECT_DOUBLE_EQ(s.mean, 100.5);
  EXPECT_DOUBLE_EQ(s.median, 100.5);
  EXPECT_DOUBLE_EQ(s.p99, 198.0);  // nearest rank ceil(0.99 * 200) = 198
  EXPECT_DOUBLE_EQ(s.max, 200.0);
  const std::vector<double> nll = {std::log(2.0), std::log(8.0)};
  EXPECT_NEAR(perplexity(nll), 4.0, 1e-12);  // exp(mean) = sqrt(2 * 8)
}

TEST(LogitStats, PerplexityPlanIsLlamaCppWindows) {
  const PplPlan p = plan_perplexity(1050, 512);
  EXPECT_EQ(p.n_chunks, 2);  // the trailing 26 tokens are dropped
  EXPECT_EQ(p.first, 256);
  EXPECT_EQ(p.scored_per_chunk(), 255);  // logits at 256..510 score tokens 257..511
  EXPECT_THROW(plan_perplexity(100, 512), Error);
}

std::string tmp_path(const char* name) {
  return testing::TempDir() + "/" + name + std::to_string(::getpid());
}

RefLogits small_ref() {
  RefLogits r;
  r.n_vocab = 3;
  r.plan = plan_perplexity(8, 4);  // 2 windows of 4, 1 scored row each
  r.tokens = {0, 1, 2, 1, 0, 2, 2, 1};
  const std::vector<float> row = {std::log(0.25f), std::log(0.5f), std::log(0.25f)};
  for (int i = 0; i < 2; ++i) r.logp.insert(r.logp.end(), row.begin(), row.end());
  return r;
}

TEST(LogitsFile, RoundTrips) {
  const std::string path = tmp_path("ref_ok");
  const RefLogits r = small_ref();
  write_ref_logits(path, r);
  const RefLogits b = read_ref_logits(path);
  EXPECT_EQ(b.n_vocab, 3);
  EXPECT_EQ(b.plan.n_chunks, 2);
  EXPECT_EQ(b.tokens, r.tokens);
  EXPECT_EQ(b.logp, r.logp);
  std::remove(path.c_str());
}

// Rewrites byte `at` of a valid file (or truncates it) and expects the reader to refuse.
void expect_rejected(size_t at, char value, bool truncate = false) {
  const std::string path = tmp_path("ref_bad");
  write_ref_logits(path, small_ref());
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  if (truncate)
    bytes.resize(at);
  else
    bytes[at] = value;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_THROW(read_ref_logits(path), Error) << "byte " << at;
  std::remove(path.c_str());
}

TEST(LogitsFile, HostileFilesAreRejected) {
  expect_rejected(0, 'X');                    // magic
  expect_rejected(11, '\x7f');                // n_vocab huge
  expect_rejected(8, '\0');                   // n_vocab 0 (3 -> 0)
  expect_rejected(12, '\x05');                // n_ctx 5: first no longer n_ctx/2, size mismatch
  expect_rejected(19, '\x40');                // n_chunks huge: size mismatch, no allocation
  expect_rejected(24, '\x09');                // token 9 outside the vocabulary
  expect_rejected(24 + 32 + 3, '\x7f');       // a log-prob becomes NaN
  expect_rejected(24 + 32 + 3, '\x3f');       // a log-prob becomes positive
  expect_rejected(30, 0, /*truncate=*/true);  // short file
  expect_rejected(4, 0, /*truncate=*/true);   // shorter than the header
}

}  // namespace
}  // namespace strata
