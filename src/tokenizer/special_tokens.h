// Splitting text on the texts of special tokens before tokenization (llama.cpp's
// tokenizer_st_partition): control, unknown and user-defined tokens, longest first.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_map.h"
#include "tokenizer/vocab.h"

namespace strata::tok {

struct Fragment {
  int32_t token;  // -1: raw text to tokenize; else this token
  size_t offset;  // raw text: its bytes in the input
  size_t length;
};

class SpecialMatcher {
 public:
  void build(const std::vector<std::string>& texts, const std::vector<TokenType>& types);

  // Replaces `out` with the fragments of `text`. Control and unknown tokens match only
  // when parse_special is set; user-defined tokens always match. Matching is greedy by
  // priority: longer token texts first (then lower id), each taking its leftmost
  // non-overlapping occurrences in the text not yet taken, which is the order in which
  // llama.cpp splits.
  // `plain`: sorted, non-overlapping spans of `text` in which control and unknown tokens
  // never match, even with parse_special (text a user wrote, inside a rendered chat
  // prompt); user-defined tokens still do.
  void split(std::string_view text, bool parse_special, std::vector<Fragment>& out,
             std::span<const strata::TextSpan> plain = {}) const;
  // Whether token `id` matches without parse_special (a user-defined token).
  bool always_matches(int32_t id) const { return always_[static_cast<size_t>(id)] != 0; }

  bool empty() const { return map_.size() == 0; }

 private:
  StringMap map_;                  // token text -> id
  std::vector<uint8_t> always_;    // [n_vocab] 1: matched even without parse_special
  std::vector<uint32_t> lengths_;  // distinct text lengths, longest first
  std::array<bool, 256> first_byte_{};
  bool any_always_ = false;
};

}  // namespace strata::tok
