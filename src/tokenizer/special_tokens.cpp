#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <map>

namespace strata::tok {

using strata::TextSpan;

void SpecialMatcher::build(const std::vector<std::string>& texts,
                           const std::vector<TokenType>& types) {
  always_.assign(texts.size(), 0);
  for (size_t id = 0; id < texts.size(); ++id) {
    const TokenType type = types[id];
    if (texts[id].empty()) continue;
    if (type != TokenType::kControl && type != TokenType::kUnknown &&
        type != TokenType::kUserDefined)
      continue;
    if (!map_.insert(texts[id], static_cast<int32_t>(id))) continue;
    first_byte_[static_cast<unsigned char>(texts[id][0])] = true;
    const auto length = static_cast<uint32_t>(texts[id].size());
    if (std::find(lengths_.begin(), lengths_.end(), length) == lengths_.end())
      lengths_.push_back(length);
    if (type == TokenType::kUserDefined) {
      always_[id] = 1;
      any_always_ = true;
    }
  }
  std::sort(lengths_.begin(), lengths_.end(), std::greater<>());
}

namespace {

// Whether [offset, offset + length) overlaps one of the sorted spans.
bool overlaps(std::span<const TextSpan> spans, size_t offset, size_t length) {
  // The first span ending after `offset`; it overlaps if it starts before the end.
  const auto it = std::partition_point(
      spans.begin(), spans.end(), [&](const TextSpan& s) { return s.offset + s.length <= offset; });
  return it != spans.end() && it->offset < offset + length;
}

}  // namespace

void SpecialMatcher::split(std::string_view text, bool parse_special, std::vector<Fragment>& out,
                           std::span<const TextSpan> plain) const {
  out.clear();
  struct Match {
    uint32_t length;
    int32_t token;
    size_t offset;
  };
  std::vector<Match> matches;
  if (parse_special || any_always_) {
    for (size_t pos = 0; pos < text.size(); ++pos) {
      if (!first_byte_[static_cast<unsigned char>(text[pos])]) continue;
      for (uint32_t length : lengths_) {
        if (length > text.size() - pos) continue;
        const int32_t id = map_.find(text.substr(pos, length));
        if (id < 0) continue;
        const bool allowed =
            always_[id] || (parse_special && (plain.empty() || !overlaps(plain, pos, length)));
        if (allowed) matches.push_back({length, id, pos});
      }
    }
  }
  if (matches.empty()) {
    if (!text.empty()) out.push_back({-1, 0, text.size()});
    return;
  }
  // Take matches in priority order, skipping any that overlap one already taken.
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) {
    if (a.length != b.length) return a.length > b.length;
    if (a.token != b.token) return a.token < b.token;
    return a.offset < b.offset;
  });
  std::map<size_t, const Match*> taken;  // offset -> accepted match, non-overlapping
  for (const Match& m : matches) {
    const size_t end = m.offset + m.length;
    const auto next = taken.lower_bound(m.offset);
    if (next != taken.end() && next->first < end) continue;
    if (next != taken.begin()) {
      const Match* before = std::prev(next)->second;
      if (before->offset + before->length > m.offset) continue;
    }
    taken.emplace(m.offset, &m);
  }
  size_t pos = 0;
  for (const auto& [offset, m] : taken) {
    if (offset > pos) out.push_back({-1, pos, offset - pos});
    out.push_back({m->token, offset, m->length});
    pos = offset + m->length;
  }
  if (pos < text.size()) out.push_back({-1, pos, text.size() - pos});
}

}  // namespace strata::tok
