// The tiny trained model's tokenizer (../shared/models/aidreams260K.tok512.bin, llama2.c
// format) turned into the VocabData that strata's llama2.c converter writes to GGUF must
// reproduce llama2.c's own encoding and decoding (aidreams260K.ref.json).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_util.h"

namespace strata {
namespace {

using testing::read_binary_file;
using testing::tokenizer_shared_dir;

// llama2.c tokenizer file: int32 max_token_length, then per token float32 score,
// int32 length, bytes. Spaces become U+2581 and ids 0..2 / 3..258 get their sentencepiece
// names and types, as the GGUF converter does.
VocabData read_llama2c_tokenizer(const std::string& path, int32_t n_vocab) {
  const std::string bytes = read_binary_file(path);
  size_t pos = 4;
  auto read = [&](void* dst, size_t n) {
    if (pos + n > bytes.size()) throw Error(path + ": truncated");
    std::memcpy(dst, bytes.data() + pos, n);
    pos += n;
  };
  VocabData v;
  v.model = "llama";
  for (int32_t id = 0; id < n_vocab; ++id) {
    float score;
    int32_t length;
    read(&score, 4);
    read(&length, 4);
    if (length < 0) throw Error(path + ": negative token length");
    std::string text(static_cast<size_t>(length), '\0');
    read(text.data(), text.size());
    std::string piece;
    for (char c : text) piece += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    TokenType type = TokenType::kNormal;
    if (id == 0) {
      piece = "<unk>";
      type = TokenType::kUnknown;
    } else if (id == 1 || id == 2) {
      piece = id == 1 ? "<s>" : "</s>";
      type = TokenType::kControl;
    } else if (id <= 258) {
      type = TokenType::kByte;
    }
    v.tokens.push_back(piece);
    v.scores.push_back(score);
    v.token_types.push_back(static_cast<int32_t>(type));
  }
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return v;
}

class Llama2cVocab : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = tokenizer_shared_dir() + "/models/";
    reference_ = nlohmann::json::parse(read_binary_file(dir + "aidreams260K.ref.json"));
    const int32_t n_vocab = reference_["config"]["vocab_size"].get<int32_t>();
    tokenizer_ = std::make_unique<Tokenizer>(
        Tokenizer::from_vocab(read_llama2c_tokenizer(dir + "aidreams260K.tok512.bin", n_vocab)));
  }

  nlohmann::json reference_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

TEST_F(Llama2cVocab, PromptTokensMatchLlama2c) {
  ASSERT_EQ(reference_["cases"].size(), 4u);
  for (const auto& c : reference_["cases"]) {
    const std::string prompt = c["prompt_text"].get<std::string>();
    const auto expected = c["prompt_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer_->encode(prompt, /*add_bos=*/true, /*parse_special=*/false), expected)
        << prompt;
  }
  EXPECT_EQ(tokenizer_->encode("I dreamed", true, false),
            (std::vector<int32_t>{1, 303, 281, 269, 435, 447, 328}));
}

TEST_F(Llama2cVocab, DecodeGivesPromptBack) {
  for (const auto& c : reference_["cases"]) {
    const auto ids = c["prompt_tokens"].get<std::vector<int32_t>>();
    EXPECT_EQ(tokenizer_->decode(ids), c["prompt_text"].get<std::string>());
  }
}

TEST_F(Llama2cVocab, StreamingDecodeMatchesGreedyText) {
  for (const auto& c : reference_["cases"]) {
    StreamingDecoder stream(*tokenizer_);
    std::string text;
    for (int32_t id : c["greedy_tokens"].get<std::vector<int32_t>>()) text += stream.push(id);
    text += stream.flush();
    EXPECT_EQ(text, c["greedy_text"].get<std::string>());
  }
}

TEST_F(Llama2cVocab, SpecialTokensAndPieces) {
  EXPECT_EQ(tokenizer_->n_vocab(), 512);
  EXPECT_EQ(tokenizer_->bos_id(), 1);
  EXPECT_EQ(tokenizer_->eos_id(), 2);
  EXPECT_TRUE(tokenizer_->add_bos());
  EXPECT_TRUE(tokenizer_->is_eog(2));
  EXPECT_FALSE(tokenizer_->is_eog(1));
  EXPECT_TRUE(tokenizer_->is_control(1));
  EXPECT_EQ(tokenizer_->token_to_piece(3 + 'A'), "A");  // byte token <0x41>
  EXPECT_EQ(tokenizer_->token_to_piece(262), " a");
  EXPECT_EQ(tokenizer_->token_to_piece(1), "<s>");
  EXPECT_EQ(tokenizer_->token_text(262),
            "\xE2\x96\x81"
            "a");
  EXPECT_EQ(tokenizer_->token_id("\xE2\x96\x81"
                                 "a"),
            262);
  // A character with no piece falls back to its UTF-8 bytes.
  const std::vector<int32_t> ids = tokenizer_->encode("\xE2\x82\xAC", false, false);  // U+20AC
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(std::vector<int32_t>(ids.end() - 3, ids.end()),
            (std::vector<int32_t>{3 + 0xE2, 3 + 0x82, 3 + 0xAC}));
  EXPECT_EQ(tokenizer_->decode(ids), "\xE2\x82\xAC");
}

}  // namespace
}  // namespace strata
