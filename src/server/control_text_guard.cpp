#include "server/control_text_guard.h"

#include <charconv>

namespace strata::server {
namespace {

using nlohmann::json;

constexpr std::string_view kClose = "#>";

bool any_control_text(const Tokenizer& tok, const json& v) {
  if (v.is_string()) return !tok.control_token_spans(v.get_ref<const std::string&>()).empty();
  if (v.is_array() || v.is_object()) {
    for (const json& e : v) {
      if (any_control_text(tok, e)) return true;
    }
  }
  return false;
}

}  // namespace

bool ControlTextGuard::scan(const json& messages, std::string_view template_source) {
  if (!any_control_text(tokenizer_, messages)) return false;
  // A prefix that neither the template nor any message contains, so every occurrence
  // after rendering is one of ours.
  const std::string all = messages.dump();
  for (unsigned nonce = 0;; ++nonce) {
    open_ = "<#ctl" + std::to_string(nonce) + ":";
    if (all.find(open_) == std::string::npos && template_source.find(open_) == std::string::npos)
      break;
  }
  protected_ = messages;
  protect(protected_);
  return true;
}

void ControlTextGuard::protect(json& value) {
  if (value.is_array() || value.is_object()) {
    for (json& e : value) protect(e);
    return;
  }
  if (!value.is_string()) return;
  const std::string& s = value.get_ref<const std::string&>();
  const std::vector<TextSpan> spans = tokenizer_.control_token_spans(s);
  if (spans.empty()) return;
  std::string out;
  size_t pos = 0;
  for (const TextSpan& span : spans) {
    out.append(s, pos, span.offset - pos);
    out += open_ + std::to_string(originals_.size()) + std::string(kClose);
    originals_.push_back(s.substr(span.offset, span.length));
    pos = span.offset + span.length;
  }
  out.append(s, pos);
  value = std::move(out);
}

std::vector<TextSpan> ControlTextGuard::restore(std::string& rendered) const {
  std::vector<TextSpan> spans;
  if (originals_.empty()) return spans;
  std::string out;
  out.reserve(rendered.size());
  size_t pos = 0;
  for (;;) {
    const size_t at = rendered.find(open_, pos);
    if (at == std::string::npos) break;
    const char* digits = rendered.data() + at + open_.size();
    const char* end = rendered.data() + rendered.size();
    size_t index = 0;
    const auto [next, ec] = std::from_chars(digits, end, index);
    const bool whole = ec == std::errc() && index < originals_.size() &&
                       std::string_view(next, static_cast<size_t>(end - next)).starts_with(kClose);
    if (!whole) {  // cut apart by the template: keep the text as it is
      out.append(rendered, pos, at + open_.size() - pos);
      pos = at + open_.size();
      continue;
    }
    out.append(rendered, pos, at - pos);
    spans.push_back({out.size(), originals_[index].size()});
    out += originals_[index];
    pos = static_cast<size_t>(next - rendered.data()) + kClose.size();
  }
  out.append(rendered, pos);
  rendered = std::move(out);
  return spans;
}

}  // namespace strata::server
