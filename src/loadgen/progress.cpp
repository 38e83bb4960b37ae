#include "loadgen/progress.h"

#include <algorithm>

namespace strata::loadgen {

std::string progress_line(const Progress& p, int width) {
  const int64_t done = p.completed + p.failed;
  const double frac =
      p.total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(p.total), 0.0, 1.0)
                  : 0.0;
  const int filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(static_cast<size_t>(width), '.');
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "[%s] %lld/%lld done, %lld failed, %lld running, %.1f s, %.1f tok/s", bar.c_str(),
                static_cast<long long>(done), static_cast<long long>(p.total),
                static_cast<long long>(p.failed), static_cast<long long>(p.running), p.elapsed_s,
                p.elapsed_s > 0 ? static_cast<double>(p.output_tokens) / p.elapsed_s : 0.0);
  return buf;
}

void ProgressBar::update(const Progress& p) {
  std::string line = progress_line(p);
  const size_t len = line.size();
  if (len < last_len_) line.append(last_len_ - len, ' ');
  last_len_ = len;
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
}

void ProgressBar::finish() {
  if (last_len_ > 0) std::fprintf(out_, "\n");
  std::fflush(out_);
  last_len_ = 0;
}

}  // namespace strata::loadgen
