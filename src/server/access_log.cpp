#include "server/access_log.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace strata::server {

void log_access(const AccessRecord& r) {
  char line[1024];
  int n = std::snprintf(
      line, sizeof line, "strata serve: access id=%.64s %.16s %.200s %d remote=%.64s", r.id.c_str(),
      r.method.empty() ? "-" : r.method.c_str(), r.path.empty() ? "-" : r.path.c_str(), r.status,
      r.remote.empty() ? "-" : r.remote.c_str());
  auto append = [&](const char* fmt, auto... args) {
    if (n > 0 && static_cast<size_t>(n) < sizeof line) {
      n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), fmt, args...);
    }
  };
  if (r.prompt_tokens >= 0) append(" prompt=%lld", static_cast<long long>(r.prompt_tokens));
  if (r.completion_tokens >= 0)
    append(" completion=%lld", static_cast<long long>(r.completion_tokens));
  if (r.ttft_s >= 0) append(" ttft=%.4fs", r.ttft_s);
  append(" total=%.4fs\n", r.total_s);
  if (n <= 0) return;
  const size_t len = std::min(static_cast<size_t>(n), sizeof line - 1);
  if (line[len - 1] != '\n') line[len - 1] = '\n';
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, len);
}

}  // namespace strata::server
