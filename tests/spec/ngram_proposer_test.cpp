#include "spec/ngram_proposer.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace strata {
namespace {

std::vector<int32_t> lookup(const std::vector<int32_t>& t, int32_t n_min, int32_t n_max,
                            int32_t k) {
  std::vector<int32_t> out;
  ngram_lookup(t, n_min, n_max, k, out);
  return out;
}

TEST(NgramLookup, ProposesWhatFollowedTheLongestEarlierMatch) {
  // Suffix "3 4": its earlier occurrence at 2..3 was followed by 5 6 7.
  const std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 8, 3, 4};
  EXPECT_EQ(lookup(t, 1, 3, 3), (std::vector<int32_t>{5, 6, 7}));
  EXPECT_EQ(lookup(t, 1, 3, 10), (std::vector<int32_t>{5, 6, 7, 8, 3, 4}));
}

TEST(NgramLookup, PrefersTheLongerSuffixOverAMoreRecentShorterOne) {
  // "4" alone last occurred at 6 (followed by 9), but "3 4" occurred at 1..2 (then 5).
  const std::vector<int32_t> t = {0, 3, 4, 5, 0, 0, 4, 9, 3, 4};
  EXPECT_EQ(lookup(t, 1, 2, 1), (std::vector<int32_t>{5}));
  EXPECT_EQ(lookup(t, 1, 1, 1), (std::vector<int32_t>{9}));
}

TEST(NgramLookup, MostRecentOccurrenceWins) {
  const std::vector<int32_t> t = {7, 1, 7, 2, 7};
  EXPECT_EQ(lookup(t, 1, 1, 1), (std::vector<int32_t>{2}));
}

TEST(NgramLookup, NothingWithoutAMatchOrBelowTheMinimum) {
  EXPECT_TRUE(lookup({1, 2, 3, 4}, 1, 4, 4).empty());
  EXPECT_TRUE(lookup({5, 1, 2, 9, 2}, 2, 3, 4).empty());  // only a 1-gram repeats
  EXPECT_TRUE(lookup({5}, 1, 4, 4).empty());
  EXPECT_TRUE(lookup({}, 1, 4, 4).empty());
  EXPECT_TRUE(lookup({1, 1, 1}, 1, 2, 0).empty());
}

TEST(NgramProposer, FillsAtMostSpecKTokens) {
  SamplingParams sp;
  Request r(1, {4, 5, 6, 4, 5}, RequestOptions{}, 16);
  r.spec_k = 1;
  NgramProposer p(1, 3);
  Request* rs[] = {&r};
  p.propose(rs);
  EXPECT_EQ(r.draft, (std::vector<int32_t>{6}));
  EXPECT_TRUE(r.draft_probs.empty());
  EXPECT_THROW(NgramProposer(0, 2), Error);
  EXPECT_THROW(NgramProposer(3, 2), Error);
}

}  // namespace
}  // namespace strata
