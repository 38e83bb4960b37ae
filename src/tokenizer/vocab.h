// The tokenizer's input data as plain values, exactly as a GGUF file stores it under
// tokenizer.ggml.*. Tokenizer::from_vocab validates it; vocab_from_gguf reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata {

namespace gguf {
class GgufFile;
}

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
// A byte range of a text.
struct TextSpan {
  size_t offset = 0;
  size_t length = 0;
};

enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct VocabData {
  std::string
      model;        // tokenizer.ggml.model: "llama" (sentencepiece BPE) or "gpt2" (byte-level BPE)
  std::string pre;  // tokenizer.ggml.pre: pre-tokenizer family for gpt2 ("" = default)
  std::vector<std::string> tokens;   // tokenizer.ggml.tokens, the piece of each id
  std::vector<float> scores;         // tokenizer.ggml.scores; empty = all 0
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (TokenType); empty = all normal
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "left right", highest priority first

  // Special token ids; unset means the model family's default (llama: bos 1, eos 2, unk 0).
  std::optional<int32_t> bos, eos, eot, eom, unk, pad;
  // Unset means the family's default: add_bos is true for llama and the llama3-style
  // gpt2 pre-tokenizers, add_eos false, add_space_prefix true for llama only.
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

// Reads the tokenizer.ggml.* metadata of `file`; throws strata::Error naming the key
// when one is missing or has the wrong type.
VocabData vocab_from_gguf(const gguf::GgufFile& file);

}  // namespace strata
