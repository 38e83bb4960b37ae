// UTF-8 helpers shared by the tokenizers, and GPT-2's byte-to-unicode alphabet.
//
// Tokenizer input is untrusted: every function here accepts arbitrary bytes. A byte that
// does not begin a well-formed UTF-8 sequence is treated as a one-byte "character", so
// splitting text into characters never fails and never loses bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/utf8.h"

namespace strata::tok {

// Byte-level UTF-8 lives in core/utf8.h (shared with the chat-template engine).
using ::strata::utf8_append;
using ::strata::utf8_classify_prefix;
using ::strata::utf8_decode;
using ::strata::utf8_valid_length;
using ::strata::Utf8Prefix;

// Bytes that make up the character at s[pos]: the well-formed sequence, or 1 byte.
inline size_t utf8_char_length(std::string_view s, size_t pos) {
  const auto b = static_cast<unsigned char>(s[pos]);
  if (b < 0x80) return 1;
  const size_t n = utf8_valid_length(s, pos);
  return n == 0 ? 1 : n;
}

// `s` in double quotes for an error message: control bytes and bytes >= 0x80 escaped
// as \xNN, cut after 64 bytes.
std::string quote_for_error(std::string_view s);

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";         // U+2581 '▁'

// GPT-2's reversible map from bytes to printable code points: printable Latin-1 bytes
// map to themselves, the other 68 bytes to U+0100.. in byte order.
struct ByteAlphabet {
  std::array<std::string, 256> byte_to_utf8;   // UTF-8 text of each byte's code point
  std::array<int16_t, 324> codepoint_to_byte;  // -1 where a code point is not in the map
};
const ByteAlphabet& byte_alphabet();

// The byte that code point `cp` stands for in the GPT-2 alphabet, or -1.
inline int byte_of_codepoint(uint32_t cp) {
  const auto& table = byte_alphabet().codepoint_to_byte;
  return cp < table.size() ? table[cp] : -1;
}

}  // namespace strata::tok
