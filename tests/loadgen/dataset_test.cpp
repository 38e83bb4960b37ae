// Dataset prompts have exactly the asked token counts under the target model's
// tokenizer (the tiny real model's), and the text re-tokenizes to the same ids.
#include "loadgen/dataset.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/error.h"
#include "loadgen/token_source.h"
#include "support/paths.h"
#include "support/tiny_models.h"

namespace strata::loadgen {
namespace {

TokenSource& tiny() {
  static auto tok = local_token_source(strata::testing::aidreams_gguf());
  return *tok;
}

void expect_exact(const std::vector<Prompt>& prompts) {
  for (const Prompt& p : prompts) {
    EXPECT_EQ(tiny().encode(p.text), p.ids) << p.text;
    EXPECT_EQ(tiny().decode(p.ids), p.text);
  }
}

TEST(Dataset, WordTokensRoundTrip) {
  const auto words = word_tokens(tiny(), 0);
  EXPECT_GE(words.size(), 8u);
  for (int32_t id : words) {
    EXPECT_EQ(tiny().encode(tiny().decode({id})), std::vector<int32_t>{id});
  }
}

TEST(Dataset, RandomHasExactLengths) {
  DatasetOptions o;
  o.num_prompts = 20;
  o.input_len = 37;
  o.output_len = 9;
  const auto prompts = build_dataset(o, tiny());
  ASSERT_EQ(prompts.size(), 20u);
  for (const Prompt& p : prompts) {
    EXPECT_EQ(p.ids.size(), 37u);
    EXPECT_EQ(p.output_len, 9);
  }
  expect_exact(prompts);
  // Same seed, same prompts; another seed, others.
  EXPECT_EQ(build_dataset(o, tiny())[3].ids, prompts[3].ids);
  o.seed = 1;
  EXPECT_NE(build_dataset(o, tiny())[3].ids, prompts[3].ids);
}

TEST(Dataset, RandomRangeRatioAndSharedPrefix) {
  DatasetOptions o;
  o.num_prompts = 50;
  o.input_len = 40;
  o.output_len = 20;
  o.range_ratio = 0.5;
  o.prefix_len = 10;
  const auto prompts = build_dataset(o, tiny());
  std::set<size_t> lens;
  for (const Prompt& p : prompts) {
    EXPECT_GE(p.ids.size(), 10u + 20u);
    EXPECT_LE(p.ids.size(), 10u + 60u);
    EXPECT_GE(p.output_len, 10);
    EXPECT_LE(p.output_len, 30);
    lens.insert(p.ids.size());
    EXPECT_TRUE(std::equal(prompts[0].ids.begin(), prompts[0].ids.begin() + 10, p.ids.begin()));
  }
  EXPECT_GT(lens.size(), 5u);
  expect_exact(prompts);
}

TEST(Dataset, SharedPrefixKPrefixesTimesMQuestions) {
  DatasetOptions o;
  o.name = "shared-prefix";
  o.num_prompts = 12;
  o.num_prefixes = 3;
  o.prefix_len = 50;
  o.question_len = 8;
  o.output_len = 4;
  const auto prompts = build_dataset(o, tiny());
  ASSERT_EQ(prompts.size(), 12u);
  std::map<std::vector<int32_t>, int> per_prefix;
  for (const Prompt& p : prompts) {
    ASSERT_EQ(p.ids.size(), 58u);
    ++per_prefix[std::vector<int32_t>(p.ids.begin(), p.ids.begin() + 50)];
  }
  ASSERT_EQ(per_prefix.size(), 3u);
  for (const auto& [prefix, n] : per_prefix) EXPECT_EQ(n, 4);
  expect_exact(prompts);
}

TEST(Dataset, LongDocRepeatsDocuments) {
  DatasetOptions o;
  o.name = "long-doc";
  o.num_prompts = 40;
  o.doc_len_min = 300;
  o.doc_len_max = 600;
  o.question_len = 6;
  o.doc_repeat_rate = 0.5;
  const auto prompts = build_dataset(o, tiny());
  std::map<std::vector<int32_t>, int> docs;
  for (const Prompt& p : prompts) {
    ASSERT_GE(p.ids.size(), 306u);
    ASSERT_LE(p.ids.size(), 606u);
    ++docs[std::vector<int32_t>(p.ids.begin(), p.ids.end() - 6)];
  }
  // About half the requests reuse a document.
  EXPECT_GE(docs.size(), 10u);
  EXPECT_LE(docs.size(), 30u);
  expect_exact(prompts);
  o.doc_repeat_rate = 0;
  o.num_prompts = 5;
  std::set<std::vector<int32_t>> fresh;
  for (const Prompt& p : build_dataset(o, tiny())) fresh.insert(p.ids);
  EXPECT_EQ(fresh.size(), 5u);
}

TEST(Dataset, JsonlFileCountsWithTheTokenizer) {
  const std::string path = strata::testing::scratch_dir() + "/prompts.jsonl";
  {
    std::ofstream out(path);
    out << "{\"prompt\": \"Once upon a time\", \"output_len\": 12}\n\n"
        << "{\"prompt\": \"The dream\"}\n";
  }
  DatasetOptions o;
  o.name = path;
  o.output_len = 5;
  const auto prompts = build_dataset(o, tiny());
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].ids, tiny().encode("Once upon a time"));
  EXPECT_EQ(prompts[0].output_len, 12);
  EXPECT_EQ(prompts[1].output_len, 5);
  {
    std::ofstream out(path);
    out << "{\"text\": \"x\"}\n";
  }
  EXPECT_THROW(build_dataset(o, tiny()), Error);
}

TEST(Dataset, RejectsBadOptions) {
  DatasetOptions o;
  o.name = "nope";
  EXPECT_THROW(validate(o), Error);
  o.name = "shared-prefix";
  EXPECT_THROW(validate(o), Error);  // --prefix-len 0
  o.prefix_len = 10;
  o.num_prefixes = 2000;
  EXPECT_THROW(validate(o), Error);
  o = DatasetOptions{};
  o.range_ratio = 1;
  EXPECT_THROW(validate(o), Error);
  o = DatasetOptions{};
  o.name = "long-doc";
  o.doc_len_max = 10;
  EXPECT_THROW(validate(o), Error);
}

}  // namespace
}  // namespace strata::loadgen
