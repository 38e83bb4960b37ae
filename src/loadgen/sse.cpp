#include "loadgen/sse.h"

namespace strata::loadgen {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> events;
  for (const char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;
    }
    if (c != '\n' && c != '\r') {
      line_ += c;
      continue;
    }
    after_cr_ = c == '\r';
    if (line_.empty()) {  // blank line: dispatch
      if (has_data_) events.push_back(std::move(data_));
      data_.clear();
      has_data_ = false;
      continue;
    }
    std::string_view line = line_;
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    if (colon != 0 && field == "data") {
      std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      if (has_data_) data_ += '\n';
      data_.append(value);
      has_data_ = true;
    }
    line_.clear();
  }
  return events;
}

}  // namespace strata::loadgen
