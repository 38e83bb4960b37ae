// Loads the real vocabulary-only GGUF files in shared/vocab.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

namespace strata::gguf {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> vocab_files() {
  std::vector<std::string> out;
  const fs::path dir = fs::path(test::shared_dir()) / "vocab";
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".gguf") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::vector<uint8_t> bytes(fs::file_size(path));
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  const size_t n = std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  bytes.resize(n);
  return bytes;
}

TEST(Vocab, EveryFileLoadsWithSaneTokenizerMetadata) {
  const auto files = vocab_files();
  ASSERT_GE(files.size(), 4u) << "no vocab files under " << test::shared_dir();
  for (const auto& path : files) {
    SCOPED_TRACE(path);
    const GgufFile f = GgufFile::open(path);
    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    EXPECT_TRUE(f.tensors().empty());
    EXPECT_FALSE(f.get_string("general.architecture").empty());

    const std::string model = f.get_string("tokenizer.ggml.model");
    EXPECT_TRUE(model == "llama" || model == "gpt2") << model;

    const Array& tokens = f.get_array("tokenizer.ggml.tokens");
    ASSERT_NE(tokens.strings(), nullptr);
    const uint64_t n_vocab = tokens.size();
    EXPECT_GE(n_vocab, 30000u);
    EXPECT_LE(n_vocab, 200000u);
    EXPECT_EQ(f.get_int_array("tokenizer.ggml.token_type").size(), n_vocab);
    if (f.has("tokenizer.ggml.scores")) {
      EXPECT_EQ(f.get_float_array("tokenizer.ggml.scores").size(), n_vocab);
    }
    if (model == "gpt2") {
      EXPECT_GT(f.get_string_array("tokenizer.ggml.merges").size(), 1000u);
    }
    EXPECT_LT(f.get_uint("tokenizer.ggml.eos_token_id"), n_vocab);
    EXPECT_LT(f.get_uint("tokenizer.ggml.bos_token_id"), n_vocab);
  }
}

TEST(Vocab, KnownFamiliesHaveTheirVocabularySizes) {
  const std::string dir = test::shared_dir() + "/vocab/";
  const GgufFile spm = GgufFile::open(dir + "ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(spm.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(spm.get_string_array("tokenizer.ggml.tokens").size(), 32000u);
  EXPECT_EQ(spm.get_string_array("tokenizer.ggml.tokens")[1], "<s>");
  EXPECT_TRUE(spm.get_bool("tokenizer.ggml.add_bos_token"));

  const GgufFile gpt2 = GgufFile::open(dir + "ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(gpt2.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(gpt2.get_array("tokenizer.ggml.tokens").size(), 50257u);
  EXPECT_EQ(gpt2.get_uint("gpt2.block_count"), 12u);
}

// Copying every key into the writer reproduces the file byte for byte: the writer
// emits the same layout (no padding after the header of a tensor-less file).
TEST(Vocab, RewritingReproducesTheFileExactly) {
  for (const auto& path : vocab_files()) {
    SCOPED_TRACE(path);
    const GgufFile f = GgufFile::open(path);
    GgufWriter w;
    for (const auto& [k, v] : f.metadata()) w.set_value(k, v);
    EXPECT_TRUE(w.write_to_buffer() == read_all(path));
  }
}

}  // namespace
}  // namespace strata::gguf
