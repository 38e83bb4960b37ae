// UTF-8 helpers with Python `str` semantics for the template interpreter: Python counts,
// indexes and slices strings by code point, and its case mapping and whitespace tests are
// Unicode-aware. Invalid UTF-8 never throws: each stray byte decodes to U+DC80..U+DCFF (like
// Python's surrogateescape) and encodes back to the same byte, so bytes round-trip.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace strata::chat::utf8 {

// Decodes the code point starting at s[i] and advances i past it. Requires i < s.size().
char32_t decode(std::string_view s, size_t& i);
void append(std::string& out, char32_t cp);

std::u32string to_u32(std::string_view s);
std::string from_u32(std::u32string_view s);
size_t length(std::string_view s);  // number of code points

// Python str predicates and case mapping, covering Latin, Greek, Cyrillic, Armenian and
// full-width forms; other scripts have no case and map to themselves.
bool is_space(char32_t cp);
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_upper(char32_t cp);
bool is_lower(char32_t cp);
bool is_printable(char32_t cp);
char32_t to_upper(char32_t cp);
char32_t to_lower(char32_t cp);

std::string upper(std::string_view s);
std::string lower(std::string_view s);

}  // namespace strata::chat::utf8
