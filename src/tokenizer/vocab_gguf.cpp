// Reading tokenizer.ggml.* metadata from a GGUF file into VocabData.
#include <limits>

#include "core/error.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace strata {

namespace {

// A token id; a negative stored value (e.g. -1) means "no such token".
std::optional<int32_t> token_id(const gguf::GgufFile& file, std::string_view key) {
  if (!file.has(key)) return std::nullopt;
  const int64_t value = file.get_int(key);
  if (value < 0) return -1;
  if (value > std::numeric_limits<int32_t>::max()) {
    throw Error(file.name() + ": " + std::string(key) + ": token id " + std::to_string(value) +
                " is out of range");
  }
  return static_cast<int32_t>(value);
}

std::optional<bool> flag(const gguf::GgufFile& file, std::string_view key) {
  if (!file.has(key)) return std::nullopt;
  return file.get_bool(key);
}

}  // namespace

VocabData vocab_from_gguf(const gguf::GgufFile& file) {
  VocabData v;
  v.model = file.get_string("tokenizer.ggml.model");
  v.pre = file.get_string("tokenizer.ggml.pre", "");
  v.tokens = file.get_string_array("tokenizer.ggml.tokens");
  if (file.has("tokenizer.ggml.scores")) v.scores = file.get_float_array("tokenizer.ggml.scores");
  if (file.has("tokenizer.ggml.token_type")) {
    const std::vector<int64_t> types = file.get_int_array("tokenizer.ggml.token_type");
    v.token_types.reserve(types.size());
    for (int64_t t : types) {
      // Out-of-range values become "undefined" rather than wrapping into a valid type.
      const bool known = t >= 0 && t <= static_cast<int64_t>(TokenType::kByte);
      v.token_types.push_back(known ? static_cast<int32_t>(t) : 0);
    }
  }
  if (file.has("tokenizer.ggml.merges")) v.merges = file.get_string_array("tokenizer.ggml.merges");
  v.bos = token_id(file, "tokenizer.ggml.bos_token_id");
  v.eos = token_id(file, "tokenizer.ggml.eos_token_id");
  v.eot = token_id(file, "tokenizer.ggml.eot_token_id");
  v.eom = token_id(file, "tokenizer.ggml.eom_token_id");
  v.unk = token_id(file, "tokenizer.ggml.unknown_token_id");
  v.pad = token_id(file, "tokenizer.ggml.padding_token_id");
  v.add_bos = flag(file, "tokenizer.ggml.add_bos_token");
  v.add_eos = flag(file, "tokenizer.ggml.add_eos_token");
  v.add_space_prefix = flag(file, "tokenizer.ggml.add_space_prefix");
  if (v.model == "gpt2" && !file.has("tokenizer.ggml.merges")) {
    throw Error(file.name() + ": tokenizer.ggml.merges: missing (required for a gpt2 tokenizer)");
  }
  return v;
}

Tokenizer Tokenizer::from_gguf(const gguf::GgufFile& file) {
  try {
    return from_vocab(vocab_from_gguf(file));
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind(file.name(), 0) == 0) throw;
    throw Error(file.name() + ": " + message);
  }
}

}  // namespace strata
