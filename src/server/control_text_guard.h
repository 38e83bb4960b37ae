// Keeps chat messages from forging control tokens. A rendered chat prompt is tokenized
// with special-token parsing on, because the template writes the turn markers
// ("<|im_start|>", "<|eot_id|>") as text; the same text inside a message must stay
// plain text, or a user can close their turn and write a fake system or assistant one.
//
// Before rendering, every control-token text inside the messages' strings is replaced by
// a placeholder that occurs nowhere in the template or the messages; after rendering the
// placeholders are put back and their spans returned, and the tokenizer matches control
// tokens everywhere but there (Tokenizer::encode_guarded). Templates see placeholders in
// place of control text (which only changes lengths and the like of such messages);
// user-defined tokens (such as "<think>") still match, as in llama.cpp.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata::server {

class ControlTextGuard {
 public:
  explicit ControlTextGuard(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // Whether any string in `messages` holds control-token text. If so, protected()
  // returns them with that text replaced by placeholders unique against `template_source`.
  bool scan(const nlohmann::json& messages, std::string_view template_source);
  const nlohmann::json& protected_messages() const { return protected_; }

  // Puts the original texts back into `rendered` and returns their spans there, in
  // order. A placeholder the template cut apart is left as it is.
  std::vector<TextSpan> restore(std::string& rendered) const;

 private:
  void protect(nlohmann::json& value);

  const Tokenizer& tokenizer_;
  nlohmann::json protected_;
  std::string open_;  // a placeholder is open_ + index + kClose
  std::vector<std::string> originals_;
};

}  // namespace strata::server
