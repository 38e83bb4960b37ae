#include "engine/output_processor.h"

#include <algorithm>

namespace strata {
namespace {

// Largest cut <= pos that does not split a UTF-8 character.
size_t utf8_boundary(const std::string& s, size_t pos) {
  while (pos > 0 && pos < s.size() && (static_cast<unsigned char>(s[pos]) & 0xC0) == 0x80) --pos;
  return pos;
}

}  // namespace

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : decoder_(tokenizer), stops_(std::move(stop_strings)) {
  stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
  for (const auto& s : stops_) hold_ = std::max(hold_, s.size() - 1);
}

OutputProcessor::Delta OutputProcessor::push(std::span<const int32_t> tokens, bool finished) {
  Delta d;
  if (stopped_) {
    d.stopped = true;
    return d;
  }
  for (int32_t t : tokens) pending_ += decoder_.push(t);
  if (finished) pending_ += decoder_.flush();
  // Earliest stop string in the pending text.
  size_t cut = std::string::npos;
  for (const auto& s : stops_) cut = std::min(cut, pending_.find(s));
  if (cut != std::string::npos) {
    d.text = pending_.substr(0, cut);
    d.stopped = stopped_ = true;
    pending_.clear();
  } else if (finished) {
    d.text = std::move(pending_);
    pending_.clear();
  } else {
    const size_t emit =
        pending_.size() > hold_ ? utf8_boundary(pending_, pending_.size() - hold_) : 0;
    d.text = pending_.substr(0, emit);
    pending_.erase(0, emit);
  }
  text_ += d.text;
  return d;
}

std::vector<int32_t> eog_tokens(const Tokenizer& tokenizer) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < tokenizer.n_vocab(); ++i) {
    if (tokenizer.is_eog(i)) ids.push_back(i);
  }
  return ids;
}

}  // namespace strata
