// Reading tokenizer.ggml.* from GGUF metadata, including malformed metadata: every
// problem is a strata::Error that names the file and the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

gguf::GgufWriter llama_writer() {
  gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a",
                                               "\xE2\x96\x81"
                                               "a"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -1, 0});
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1, 1});
  return w;
}

Tokenizer load(const gguf::GgufWriter& w) {
  return Tokenizer::from_gguf(gguf::GgufFile::from_buffer(w.write_to_buffer(), "test.gguf"));
}

std::string load_error(const gguf::GgufWriter& w) {
  try {
    load(w);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VocabGguf, ReadsTokensAndDefaults) {
  const Tokenizer t = load(llama_writer());
  EXPECT_TRUE(t.is_spm());
  EXPECT_EQ(t.n_vocab(), 6);
  EXPECT_EQ(t.bos_id(), 1);  // llama defaults
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_EQ(t.unk_id(), 0);
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.encode("a a", true, false), (std::vector<int32_t>{1, 5, 5}));
}

TEST(VocabGguf, ReadsSwitchesAndIds) {
  auto w = llama_writer();
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_eos_token", true);
  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_u32("tokenizer.ggml.eos_token_id", 1);
  w.set_i32("tokenizer.ggml.bos_token_id", -1);  // none
  w.set_u32("tokenizer.ggml.eot_token_id", 2);
  const Tokenizer t = load(w);
  EXPECT_EQ(t.bos_id(), -1);
  EXPECT_EQ(t.eos_id(), 1);
  EXPECT_EQ(t.eot_id(), 2);
  EXPECT_TRUE(t.is_eog(1));
  EXPECT_TRUE(t.is_eog(2));
  EXPECT_EQ(t.encode("a", true, false), (std::vector<int32_t>{4, 1}));
}

TEST(VocabGguf, MalformedMetadataNamesFileAndKey) {
  auto expect_error = [](const gguf::GgufWriter& w, const std::string& key) {
    const std::string message = load_error(w);
    EXPECT_NE(message.find("test.gguf"), std::string::npos) << message;
    EXPECT_NE(message.find(key), std::string::npos) << message;
  };
  {
    gguf::GgufWriter w;
    w.set_string_array("tokenizer.ggml.tokens", {"a"});
    expect_error(w, "tokenizer.ggml.model");
  }
  {
    auto w = llama_writer();
    w.set_i32_array("tokenizer.ggml.tokens", {1, 2, 3});
    expect_error(w, "tokenizer.ggml.tokens");
  }
  {
    auto w = llama_writer();
    w.set_string_array("tokenizer.ggml.scores", {"x"});
    expect_error(w, "tokenizer.ggml.scores");
  }
  {
    auto w = llama_writer();
    w.set_i32_array("tokenizer.ggml.token_type", {1, 1});
    expect_error(w, "tokenizer.ggml.token_type");
  }
  {
    auto w = llama_writer();
    w.set_string("tokenizer.ggml.model", "gpt2");
    expect_error(w, "tokenizer.ggml.merges");
    w.set_string_array("tokenizer.ggml.merges", {"a", "b"});
    expect_error(w, "tokenizer.ggml.merges[0]");
  }
  {
    auto w = llama_writer();
    w.set_string("tokenizer.ggml.bos_token_id", "one");
    expect_error(w, "tokenizer.ggml.bos_token_id");
  }
  {
    auto w = llama_writer();
    w.set_string("tokenizer.ggml.model", "t5");
    expect_error(w, "tokenizer.ggml.model");
  }
}

TEST(VocabGguf, ToleratesOddValues) {
  auto w = llama_writer();
  w.set_i32_array("tokenizer.ggml.token_type", {2, 3, 3, 99, -7, 1});
  w.set_u32("tokenizer.ggml.padding_token_id", 1000000);  // outside the vocabulary: ignored
  const Tokenizer t = load(w);
  EXPECT_EQ(t.token_type(3), TokenType::kUndefined);
  EXPECT_EQ(t.token_type(4), TokenType::kUndefined);
  EXPECT_EQ(t.pad_id(), -1);
}

}  // namespace
}  // namespace strata
