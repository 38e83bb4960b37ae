#include "chat_template/unicode.h"

#include "core/utf8.h"

namespace strata::chat::utf8 {
namespace {

constexpr char32_t kEscapeBase = 0xDC00;  // stray byte b decodes to U+DC00 + b

// A contiguous block where upper case U+lo..U+hi maps to lower case by adding delta.
struct OffsetRange {
  char32_t lo, hi;
  int delta;
};
constexpr OffsetRange kOffsetRanges[] = {
    {0x41, 0x5A, 32},       {0xC0, 0xD6, 32},     {0xD8, 0xDE, 32},   {0x391, 0x3A1, 32},
    {0x3A3, 0x3AB, 32},     {0x386, 0x386, 38},   {0x388, 0x38A, 37}, {0x38C, 0x38C, 64},
    {0x38E, 0x38F, 63},     {0x400, 0x40F, 80},   {0x410, 0x42F, 32}, {0x531, 0x556, 48},
    {0x10A0, 0x10C5, 7264}, {0xFF21, 0xFF3A, 32},
};

// A block of alternating case pairs; upper case sits at even (or odd) code points.
struct PairRange {
  char32_t lo, hi;
  bool upper_even;
};
constexpr PairRange kPairRanges[] = {
    {0x100, 0x12F, true},  {0x132, 0x137, true}, {0x139, 0x148, false},  {0x14A, 0x177, true},
    {0x179, 0x17E, false}, {0x1DE, 0x1EF, true}, {0x1F8, 0x21F, true},   {0x222, 0x233, true},
    {0x246, 0x24F, true},  {0x3D8, 0x3EF, true}, {0x460, 0x481, true},   {0x48A, 0x4BF, true},
    {0x4C1, 0x4CE, false}, {0x4D0, 0x52F, true}, {0x1E00, 0x1E95, true}, {0x1EA0, 0x1EFF, true},
};

bool in_pair_range(char32_t cp, bool want_upper) {
  for (const PairRange& r : kPairRanges) {
    if (cp < r.lo || cp > r.hi) continue;
    bool even = (cp % 2) == 0;
    return even == (r.upper_even == want_upper);
  }
  return false;
}

}  // namespace

char32_t decode(std::string_view s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) {
    ++i;
    return c;
  }
  const size_t len = utf8_valid_length(s, i);
  if (len == 0) {
    ++i;
    return kEscapeBase + c;
  }
  const char32_t cp = utf8_decode(s, i, len);
  i += len;
  return cp;
}

void append(std::string& out, char32_t cp) {
  if (cp >= kEscapeBase + 0x80 && cp <= kEscapeBase + 0xFF) {
    out.push_back(static_cast<char>(cp - kEscapeBase));  // an escaped stray byte
  } else if (cp > 0x10FFFF) {
    utf8_append(out, 0xFFFD);
  } else {
    utf8_append(out, cp);  // other surrogates keep their three-byte form
  }
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) out.push_back(decode(s, i));
  return out;
}

std::string from_u32(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append(out, cp);
  return out;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n) decode(s, i);
  return n;
}

bool is_space(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_upper(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z';
  for (const OffsetRange& r : kOffsetRanges) {
    if (cp >= r.lo && cp <= r.hi) return true;
  }
  return cp == 0x178 || in_pair_range(cp, true);
}

bool is_lower(char32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z';
  if (cp == 0xDF || cp == 0xFF || cp == 0xB5 || cp == 0x131 || cp == 0x17F || cp == 0x3C2)
    return true;
  for (const OffsetRange& r : kOffsetRanges) {
    if (cp >= r.lo + r.delta && cp <= r.hi + r.delta) return true;
  }
  return in_pair_range(cp, false);
}

// The Latin digraphs DŽ/ǅ/ǆ, LJ/ǈ/ǉ, NJ/ǋ/ǌ and DZ/ǲ/ǳ come in upper, title and lower forms.
static int digraph_form(char32_t cp) {
  if (cp >= 0x1C4 && cp <= 0x1CC) return static_cast<int>((cp - 0x1C4) % 3);
  if (cp >= 0x1F1 && cp <= 0x1F3) return static_cast<int>(cp - 0x1F1);
  return -1;
}

char32_t to_lower(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  if (int form = digraph_form(cp); form >= 0) return cp + static_cast<char32_t>(2 - form);
  for (const OffsetRange& r : kOffsetRanges) {
    if (cp >= r.lo && cp <= r.hi) return cp + r.delta;
  }
  if (cp == 0x178) return 0xFF;
  if (cp == 0x130) return 'i';
  if (in_pair_range(cp, true)) return cp + 1;
  return cp;
}

char32_t to_upper(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
  if (int form = digraph_form(cp); form >= 0) return cp - static_cast<char32_t>(form);
  for (const OffsetRange& r : kOffsetRanges) {
    if (cp >= r.lo + r.delta && cp <= r.hi + r.delta) return cp - r.delta;
  }
  switch (cp) {
    case 0xFF:
      return 0x178;
    case 0xB5:
      return 0x39C;
    case 0x131:
      return 'I';
    case 0x17F:
      return 'S';
    case 0x3C2:
      return 0x3A3;
    default:
      break;
  }
  if (in_pair_range(cp, false)) return cp - 1;
  return cp;
}

bool is_alpha(char32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  if (is_upper(cp) || is_lower(cp)) return true;
  return cp == 0xAA || cp == 0xBA || (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
         (cp >= 0x904 && cp <= 0x939) || (cp >= 0xE01 && cp <= 0xE30) ||
         (cp >= 0x3041 && cp <= 0x3096) || (cp >= 0x30A1 && cp <= 0x30FA) ||
         (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0x20000 && cp <= 0x2FA1F);
}

bool is_digit(char32_t cp) {
  return (cp >= '0' && cp <= '9') || cp == 0xB2 || cp == 0xB3 || cp == 0xB9 ||
         (cp >= 0x660 && cp <= 0x669) || (cp >= 0x6F0 && cp <= 0x6F9) ||
         (cp >= 0x966 && cp <= 0x96F) || (cp >= 0xFF10 && cp <= 0xFF19);
}

bool is_printable(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0)) return false;
  if (cp == 0xAD || cp == 0x1680 || cp == 0x180E || (cp >= 0x2000 && cp <= 0x200F)) return false;
  if ((cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000)
    return false;
  if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61C || cp == 0x6DD || cp == 0x70F) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB))
    return false;
  if (cp == 0xFFFE || cp == 0xFFFF || cp >= 0xF0000 || (cp >= 0xE0000 && cp <= 0xE007F))
    return false;
  return true;
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t cp = decode(s, i);
    if (cp == 0xDF) {
      out += "SS";  // Python: 'ß'.upper() == 'SS'
    } else {
      append(out, to_upper(cp));
    }
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) append(out, to_lower(decode(s, i)));
  return out;
}

}  // namespace strata::chat::utf8
