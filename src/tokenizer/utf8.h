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

namespace strata::tok {

// Length (1..4) of the well-formed UTF-8 sequence starting at s[pos] (pos < s.size()), or
// 0 when the bytes there are not a complete, well-formed sequence (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_valid_length(std::string_view s, size_t pos);

// Bytes that make up the character at s[pos]: the well-formed sequence, or 1 byte.
inline size_t utf8_char_length(std::string_view s, size_t pos) {
  const auto b = static_cast<unsigned char>(s[pos]);
  if (b < 0x80) return 1;
  const size_t n = utf8_valid_length(s, pos);
  return n == 0 ? 1 : n;
}

// Decodes the well-formed sequence of length `len` at s[pos] (as found above).
uint32_t utf8_decode(std::string_view s, size_t pos, size_t len);

// Appends the UTF-8 encoding of `cp` (must be <= 0x10FFFF).
void utf8_append(std::string& out, uint32_t cp);

// Result of looking at the start of an incomplete-or-complete byte buffer, used by the
// streaming decoder: `complete` bytes form a whole character, or the buffer holds the
// beginning of one that later bytes may finish (`need_more`), or the first `invalid`
// bytes can never become a character (emit U+FFFD for them).
struct Utf8Prefix {
  size_t complete = 0;
  size_t invalid = 0;
  bool need_more = false;
};
Utf8Prefix utf8_classify_prefix(std::string_view s);

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
