// The llama.cpp tokenizer test vectors of four real vocabularies (../shared/vocab):
// encode must reproduce every expected line exactly, and decode must give the input back.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

using testing::parse_vocab_outputs;
using testing::read_binary_file;
using testing::split_vocab_inputs;
using testing::tokenizer_shared_dir;

std::string join_ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string base = tokenizer_shared_dir() + "/vocab/ggml-vocab-" + GetParam() + ".gguf";
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::from_gguf(gguf::GgufFile::open(base)));
    inputs_ = split_vocab_inputs(read_binary_file(base + ".inp"));
    expected_ = parse_vocab_outputs(read_binary_file(base + ".out"));
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<std::string> inputs_;
  std::vector<std::vector<int32_t>> expected_;
};

TEST_P(VocabVectors, EncodeMatchesReference) {
  ASSERT_EQ(inputs_.size(), expected_.size());
  ASSERT_GT(inputs_.size(), 40u);
  size_t passed = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const std::vector<int32_t> ids =
        tokenizer_->encode(inputs_[i], /*add_bos=*/false, /*parse_special=*/false);
    if (ids == expected_[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << " vector " << i << " input \"" << inputs_[i]
                    << "\"\n  expected " << join_ids(expected_[i]) << "\n  got      "
                    << join_ids(ids);
    }
  }
  std::printf("[ vectors  ] %s: %zu/%zu vectors match\n", GetParam().c_str(), passed,
              inputs_.size());
}

TEST_P(VocabVectors, DecodeGivesInputBack) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    EXPECT_EQ(tokenizer_->decode(expected_[i]), inputs_[i]) << GetParam() << " vector " << i;
  }
}

TEST_P(VocabVectors, StreamingDecodeMatchesDecode) {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    StreamingDecoder stream(*tokenizer_);
    std::string text;
    // After BOS, the sentencepiece dummy-prefix space is dropped, as decode() drops it.
    if (tokenizer_->is_spm()) text += stream.push(tokenizer_->bos_id());
    for (int32_t id : expected_[i]) text += stream.push(id);
    text += stream.flush();
    EXPECT_EQ(text, inputs_[i]) << GetParam() << " vector " << i;
  }
}

TEST_P(VocabVectors, ConcurrentEncodesAgree) {
  // Each thread has its own word cache and regex match data; results must not depend on it.
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (size_t k = 0; k < mismatches.size(); ++k) {
    threads.emplace_back([&, k] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = 0; i < inputs_.size(); ++i) {
          if (tokenizer_->encode(inputs_[i], false, false) != expected_[i]) ++mismatches[k];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST_P(VocabVectors, AddBosFollowsMetadata) {
  const std::vector<int32_t> ids = tokenizer_->encode("Hello world", /*add_bos=*/true, false);
  ASSERT_FALSE(ids.empty());
  if (tokenizer_->add_bos()) {
    EXPECT_EQ(ids.front(), tokenizer_->bos_id());
  } else {
    EXPECT_EQ(ids, tokenizer_->encode("Hello world", false, false));
  }
}

INSTANTIATE_TEST_SUITE_P(Shared, VocabVectors,
                         ::testing::Values("llama-spm", "gpt-2", "deepseek-llm", "falcon"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace strata
