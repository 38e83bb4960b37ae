// Server-sent events (text/event-stream) parsing that does not care where the network
// split the bytes: feed() whatever arrived, get back the events completed by it.
// Lines end in "\n" or "\r\n"; an empty line ends an event; the event's data is its
// "data:" lines (one optional space after the colon dropped) joined by "\n"; comments
// (":...") and other fields are ignored; an event without data lines is not reported.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::loadgen {

class SseParser {
 public:
  // Appends `bytes` and returns the data of every event they complete, in order.
  std::vector<std::string> feed(std::string_view bytes);

  // Bytes of an unfinished event are pending (the stream must not end here).
  bool pending() const { return !line_.empty() || has_data_; }

 private:
  std::string line_;  // the current, unfinished line
  std::string data_;  // data of the current event so far
  bool has_data_ = false;
  bool after_cr_ = false;  // the previous byte was '\r' ending a line: skip a following '\n'
};

}  // namespace strata::loadgen
