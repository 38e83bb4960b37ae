// Text <-> token ids for the two GGUF tokenizer families:
//
//   "llama" (sentencepiece BPE): spaces become U+2581, a space is put before the text,
//           adjacent pieces are merged highest score first, and characters with no
//           piece fall back to <0xNN> byte tokens.
//   "gpt2"  (byte-level BPE): a per-family regex splits the text into words, each byte
//           is mapped to a printable code point, and tokenizer.ggml.merges are applied
//           lowest rank first.
//
// Both reproduce llama.cpp's tokenization of the same GGUF vocabulary. A Tokenizer is
// immutable after construction: copies share the data and every method may be called
// from many threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace strata {

namespace tok {
struct TokenizerImpl;
}

class Tokenizer {
 public:
  static Tokenizer from_gguf(const gguf::GgufFile& file);
  // Validates `data` (array lengths, merges, special ids); throws strata::Error naming
  // the offending tokenizer.ggml.* field.
  static Tokenizer from_vocab(VocabData data);

  // add_bos: add the special tokens the model asks for: BOS first when
  //   tokenizer.ggml.add_bos_token (default true for llama), EOS last when
  //   tokenizer.ggml.add_eos_token (default false). This is llama.cpp's add_special.
  // parse_special: text of control tokens (e.g. "<|im_start|>") maps to those tokens;
  //   when false it is tokenized as plain text. User-defined tokens are always matched,
  //   as in llama.cpp and Hugging Face tokenizers (they are ordinary added words).
  std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;
  // The same with parse_special, except that control tokens never match inside the
  // `plain` spans (sorted, non-overlapping): a rendered chat prompt, in which only the
  // template's own text may become control tokens, not the messages' (see
  // server/prompt_builder.h).
  std::vector<int32_t> encode_guarded(std::string_view text, bool add_bos,
                                      std::span<const TextSpan> plain) const;
  // Where `text` holds the text of a control or unknown token (the texts encode() with
  // parse_special turns into such tokens), in order.
  std::vector<TextSpan> control_token_spans(std::string_view text) const;

  // Concatenated token_to_piece() of `ids`. skip_special drops control and unknown tokens
  // (BOS, EOS, <|im_end|>, ...). For llama models the space that encode() put before the
  // text is removed from the first piece, so decode(encode(s)) == s. Ids outside the
  // vocabulary produce no text.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;

  // The bytes token `id` stands for: byte tokens -> that byte, U+2581 -> space (llama),
  // GPT-2 code points mapped back to bytes (gpt2); control tokens -> their text. Throws
  // strata::Error when id is outside the vocabulary.
  std::string token_to_piece(int32_t id) const;

  int32_t n_vocab() const;
  int32_t bos_id() const;  // -1 if none
  int32_t eos_id() const;  // -1 if none
  int32_t eot_id() const;  // -1 if none
  int32_t unk_id() const;  // -1 if none
  int32_t pad_id() const;  // -1 if none
  bool add_bos() const;
  bool add_eos() const;
  bool is_spm() const;  // tokenizer.ggml.model == "llama"

  // End of generation: eos, eot, eom and tokens such as <|eot_id|>, <|im_end|>, <|end|>.
  bool is_eog(int32_t id) const;
  bool is_control(int32_t id) const;
  TokenType token_type(int32_t id) const;  // kUndefined outside the vocabulary

  std::optional<int32_t> token_id(std::string_view text) const;  // exact piece lookup
  const std::string& token_text(int32_t id) const;  // the stored piece; throws when out of range

 private:
  friend class StreamingDecoder;
  explicit Tokenizer(std::shared_ptr<const tok::TokenizerImpl> impl);
  std::vector<int32_t> encode_impl(std::string_view text, bool add_bos, bool parse_special,
                                   std::span<const TextSpan> plain) const;
  std::shared_ptr<const tok::TokenizerImpl> impl_;
};

// Per-sequence streaming decoder: push ids one at a time, get back only complete UTF-8
// text. Byte tokens are buffered until they form a whole character; bytes that can no
// longer become a character come out as U+FFFD. Control tokens produce no text. For
// llama (sentencepiece) models the leading space of the piece right after BOS is
// dropped, as llama.cpp and sentencepiece do. After warm-up, push() allocates only when
// it returns more than 15 bytes (std::string's inline capacity).
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok);

  std::string push(int32_t id);  // the newly complete text (may be empty)
  std::string flush();           // whatever is pending at the end; resets the decoder

 private:
  std::shared_ptr<const tok::TokenizerImpl> impl_;
  std::string pending_;  // bytes of an unfinished UTF-8 character
  bool after_bos_ = false;
};

}  // namespace strata
