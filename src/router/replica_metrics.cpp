#include "router/replica_metrics.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace strata::router {
namespace {

// The value of an unlabelled sample line "NAME VALUE".
std::optional<double> sample(std::string_view text, std::string_view name) {
  size_t pos = 0;
  while ((pos = text.find(name, pos)) != std::string_view::npos) {
    const size_t after = pos + name.size();
    const bool line_start = pos == 0 || text[pos - 1] == '\n';
    if (line_start && after < text.size() && text[after] == ' ') {
      const size_t end = text.find('\n', after);
      const std::string value(text.substr(
          after + 1, end == std::string_view::npos ? std::string_view::npos : end - after - 1));
      char* stop = nullptr;
      const double v = std::strtod(value.c_str(), &stop);
      if (stop == value.c_str() || !std::isfinite(v)) return std::nullopt;
      return v;
    }
    pos = after;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ReplicaGauges> parse_replica_metrics(std::string_view text) {
  const auto running = sample(text, "strata:num_requests_running");
  const auto waiting = sample(text, "strata:num_requests_waiting");
  if (!running || !waiting) return std::nullopt;
  ReplicaGauges g;
  g.running = *running;
  g.waiting = *waiting;
  g.prefix_query_tokens = sample(text, "strata:prefix_cache_queries_total").value_or(0);
  g.prefix_hit_tokens = sample(text, "strata:prefix_cache_hits_total").value_or(0);
  return g;
}

}  // namespace strata::router
