// The immutable state behind a Tokenizer, shared by copies of it and by its
// StreamingDecoders. Internal to src/tokenizer/.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/string_map.h"
#include "tokenizer/vocab.h"

namespace strata::tok {

enum class ModelKind { kSpm, kBpe };

struct TokenizerImpl {
  uint64_t id = 0;  // unique per tokenizer built; keys the per-thread word caches
  ModelKind kind = ModelKind::kSpm;
  std::vector<std::string> texts;          // [n_vocab] stored pieces
  std::vector<std::string> pieces;         // [n_vocab] bytes each token decodes to
  std::vector<float> scores;               // [n_vocab] spm merge priority (higher first)
  std::vector<TokenType> types;            // [n_vocab]
  std::vector<uint8_t> eog;                // [n_vocab] 1 for end-of-generation tokens
  StringMap piece_ids;                     // stored piece -> id (first id wins on duplicates)
  std::array<int32_t, 256> byte_tokens{};  // token for each raw byte (fallback), -1 if none

  int32_t bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, pad = -1;
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = false;   // spm: put a space before the text
  bool spm_cut_at_spaces = false;  // spm: see spm_pieces_allow_cuts()

  BpeMerges merges;           // gpt2 only
  Pretokenizer pretokenizer;  // gpt2 only
  SpecialMatcher specials;

  int32_t n_vocab() const { return static_cast<int32_t>(texts.size()); }
  bool in_range(int32_t id) const { return id >= 0 && id < n_vocab(); }
  // Control and unknown tokens: dropped by decode(skip_special) and the streaming decoder.
  bool is_special_text(int32_t id) const {
    return types[id] == TokenType::kControl || types[id] == TokenType::kUnknown;
  }
};

// Validates `data` and builds the tables; throws strata::Error naming the field at fault.
std::shared_ptr<const TokenizerImpl> build_tokenizer(VocabData data);

// Appends one byte token per byte of `text` (the fallback for text with no piece), or a
// single <unk> when some byte has no token; nothing when there is no <unk> either.
inline void emit_bytes_or_unknown(const TokenizerImpl& t, std::string_view text,
                                  std::vector<int32_t>& out) {
  for (char c : text) {
    if (t.byte_tokens[static_cast<unsigned char>(c)] < 0) {
      if (t.unk >= 0) out.push_back(t.unk);
      return;
    }
  }
  for (char c : text) out.push_back(t.byte_tokens[static_cast<unsigned char>(c)]);
}

}  // namespace strata::tok
