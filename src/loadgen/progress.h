// The live progress line on stderr: requests done out of the total, failures, requests
// in flight, elapsed time and output tokens/s, redrawn in place ("\r").
#pragma once

#include <cstdio>
#include <string>

#include "loadgen/runner.h"

namespace strata::loadgen {

std::string progress_line(const Progress& p, int width = 30);

class ProgressBar {
 public:
  explicit ProgressBar(std::FILE* out = stderr) : out_(out) {}
  void update(const Progress& p);  // redraws the line
  void finish();                   // ends the line (once something was drawn)

 private:
  std::FILE* out_;
  size_t last_len_ = 0;
};

}  // namespace strata::loadgen
