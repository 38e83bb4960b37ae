// Turns a request's generated token ids into text deltas and applies stop strings.
// It runs wherever outputs are consumed (the offline loop, or the server's threads), not
// on the engine thread. A stop string can span several tokens, so the last
// (longest stop string - 1) bytes are held back until it is clear they do not start one.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata {

class OutputProcessor {
 public:
  OutputProcessor(const Tokenizer& tokenizer, std::vector<std::string> stop_strings);

  struct Delta {
    std::string text;      // text that is now final
    bool stopped = false;  // a stop string matched; the text ends before it
  };

  // Adds tokens; with `finished`, flushes everything still held back.
  Delta push(std::span<const int32_t> tokens, bool finished);
  const std::string& text() const { return text_; }  // everything emitted so far

 private:
  StreamingDecoder decoder_;
  std::vector<std::string> stops_;
  size_t hold_ = 0;      // bytes held back (longest stop - 1)
  std::string pending_;  // decoded, not yet emitted
  std::string text_;
  bool stopped_ = false;
};

// The model's end-of-generation token ids (EOS, EOT, ...).
std::vector<int32_t> eog_tokens(const Tokenizer& tokenizer);

}  // namespace strata
