// Byte-level UTF-8, shared by the tokenizer and the chat-template interpreter: the
// well-formedness test and decoder for one sequence, and the encoder for one code point.
// Each caller keeps its own policy for bytes that are not well-formed UTF-8 (the
// tokenizer treats each as a one-byte character, the template engine as a surrogate
// escape); nothing here throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

// Length (1..4) of the well-formed UTF-8 sequence starting at s[pos] (pos < s.size()), or
// 0 when the bytes there are not a complete, well-formed sequence (RFC 3629: no
// overlongs, no surrogates, nothing above U+10FFFF).
size_t utf8_valid_length(std::string_view s, size_t pos);

// Decodes the well-formed sequence of length `len` at s[pos] (as found above).
uint32_t utf8_decode(std::string_view s, size_t pos, size_t len);

// Appends the 1..4-byte UTF-8 form of `cp`, which must be <= 0x10FFFF. A surrogate
// (U+D800..U+DFFF) gets its three-byte form, which is not well-formed UTF-8; callers that
// must not emit one replace it first.
inline void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

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

}  // namespace strata
