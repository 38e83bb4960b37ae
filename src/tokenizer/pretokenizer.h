// Regex pre-tokenizers for byte-level BPE, chosen by tokenizer.ggml.pre.
//
// A family is a chain of regexes (llama.cpp's llm_tokenizer_bpe). The text starts as one
// piece; each regex splits every piece into its matches and the gaps between them (gaps
// are kept as pieces too), and the next regex works on the result. Regexes run on PCRE2
// (UTF, UCP, JIT). \s and \S stand for Unicode White_Space, as in llama.cpp and Hugging
// Face tokenizers. Bytes that are not valid UTF-8 never match and so end up in gaps:
// they are kept, not replaced, so byte-level BPE still round-trips them.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace strata::tok {

struct TextSpan {
  size_t offset;
  size_t length;
};

class Regex;  // a compiled PCRE2 pattern (pretokenizer.cpp)

class Pretokenizer {
 public:
  // The pre-tokenizer of family `pre` (tokenizer.ggml.pre). Unknown names get llama.cpp's
  // "default" chain and a warning on stderr.
  static Pretokenizer for_family(std::string_view pre);
  // A chain of the given patterns (for tests); throws strata::Error when one does not compile.
  static Pretokenizer from_patterns(const std::vector<std::string>& patterns);

  // Calls on_word for each piece of `text`, in order; the pieces cover it exactly.
  void for_each_word(std::string_view text,
                     const std::function<void(std::string_view)>& on_word) const;
  // The same pieces as offsets into `text` (replaces `out`).
  void split(std::string_view text, std::vector<TextSpan>& out) const;

  // Family traits: a word that is itself a token skips merging (llama3-style), and
  // whether BOS is added by default.
  bool ignore_merges() const { return ignore_merges_; }
  bool default_add_bos() const { return default_add_bos_; }
  const std::string& family() const { return family_; }

 private:
  std::vector<std::shared_ptr<const Regex>> regexes_;
  bool ignore_merges_ = false;
  bool default_add_bos_ = false;
  std::string family_;
};

}  // namespace strata::tok
