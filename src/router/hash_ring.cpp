#include "router/hash_ring.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace strata::router {

HashRing::HashRing(const std::vector<std::string>& names, int vnodes) : n_replicas_(names.size()) {
  if (vnodes <= 0 || vnodes > 4096) throw Error("--vnodes: must be in [1, 4096]");
  ring_.reserve(names.size() * static_cast<size_t>(vnodes));
  for (size_t r = 0; r < names.size(); ++r) {
    for (int v = 0; v < vnodes; ++v) {
      const std::string point = names[r] + "#" + std::to_string(v);
      ring_.push_back({XXH64(point.data(), point.size(), 0), static_cast<uint32_t>(r)});
    }
  }
  // Ties (astronomically rare) broken by replica index so the ring is a pure function
  // of its names.
  std::sort(ring_.begin(), ring_.end(), [](const Point& a, const Point& b) {
    return a.hash != b.hash ? a.hash < b.hash : a.replica < b.replica;
  });
}

uint64_t chwbl_capacity(uint64_t total_in_flight, size_t n_eligible, double load_factor) {
  if (n_eligible == 0) return 0;
  if (!std::isfinite(load_factor)) return std::numeric_limits<uint64_t>::max();
  const double cap = std::ceil(load_factor * static_cast<double>(total_in_flight + 1) /
                               static_cast<double>(n_eligible));
  return static_cast<uint64_t>(std::max(1.0, cap));
}

std::optional<size_t> HashRing::pick(uint64_t key, const std::vector<uint32_t>& loads,
                                     const std::vector<bool>& eligible, double load_factor) const {
  if (loads.size() != n_replicas_ || eligible.size() != n_replicas_ || ring_.empty())
    return std::nullopt;
  uint64_t total = 0;
  size_t n = 0;
  for (size_t i = 0; i < n_replicas_; ++i) {
    if (!eligible[i]) continue;
    total += loads[i];
    ++n;
  }
  if (n == 0) return std::nullopt;
  const uint64_t capacity = chwbl_capacity(total, n, load_factor);
  auto it = std::lower_bound(ring_.begin(), ring_.end(), key,
                             [](const Point& p, uint64_t k) { return p.hash < k; });
  const size_t start = static_cast<size_t>(it - ring_.begin());
  // One lap visits every replica; the capacity exceeds the mean, so some eligible
  // replica always fits (load + 1 <= capacity) and the walk ends within the lap.
  for (size_t step = 0; step < ring_.size(); ++step) {
    const Point& p = ring_[(start + step) % ring_.size()];
    if (eligible[p.replica] && static_cast<uint64_t>(loads[p.replica]) + 1 <= capacity)
      return p.replica;
  }
  return std::nullopt;
}

std::optional<size_t> HashRing::home(uint64_t key, const std::vector<bool>& eligible) const {
  const std::vector<uint32_t> zeros(n_replicas_, 0);
  return pick(key, zeros, eligible, kUnbounded);
}

}  // namespace strata::router
