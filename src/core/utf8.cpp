#include "core/utf8.h"

namespace strata {

namespace {

// Bounds of the second byte for each lead byte (RFC 3629 table 3-7); the other
// continuation bytes are always 0x80..0xBF.
struct LeadInfo {
  uint8_t length;  // 0: not a lead byte
  uint8_t lo, hi;  // allowed range of the second byte
};

LeadInfo lead_info(unsigned char b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

}  // namespace

size_t utf8_valid_length(std::string_view s, size_t pos) {
  const auto lead = lead_info(static_cast<unsigned char>(s[pos]));
  if (lead.length <= 1) return lead.length;
  if (pos + lead.length > s.size()) return 0;
  const auto second = static_cast<unsigned char>(s[pos + 1]);
  if (second < lead.lo || second > lead.hi) return 0;
  for (size_t i = 2; i < lead.length; ++i) {
    const auto c = static_cast<unsigned char>(s[pos + i]);
    if (c < 0x80 || c > 0xBF) return 0;
  }
  return lead.length;
}

uint32_t utf8_decode(std::string_view s, size_t pos, size_t len) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  if (len == 1) return b0;
  uint32_t cp = b0 & (0x7F >> len);
  for (size_t i = 1; i < len; ++i) cp = (cp << 6) | (static_cast<unsigned char>(s[pos + i]) & 0x3F);
  return cp;
}

Utf8Prefix utf8_classify_prefix(std::string_view s) {
  Utf8Prefix r;
  if (s.empty()) return r;
  const auto lead = lead_info(static_cast<unsigned char>(s[0]));
  if (lead.length == 0) {
    r.invalid = 1;
    return r;
  }
  // Walk the bytes that are present; the first one out of range ends a maximal
  // subpart that can never complete (Unicode's "maximal subpart" replacement rule).
  for (size_t i = 1; i < lead.length; ++i) {
    if (i >= s.size()) {
      r.need_more = true;
      return r;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    const unsigned char lo = i == 1 ? lead.lo : 0x80;
    const unsigned char hi = i == 1 ? lead.hi : 0xBF;
    if (c < lo || c > hi) {
      r.invalid = i;
      return r;
    }
  }
  r.complete = lead.length;
  return r;
}

}  // namespace strata
