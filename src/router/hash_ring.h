// Consistent hashing with bounded load (CHWBL, Mirrokni et al. 2018) for the router's
// `prefix` policy. Each replica owns `vnodes` points on a 64-bit ring; a key goes to the
// first replica clockwise from its hash that is eligible (healthy) and whose load stays
// within the bound after taking it. Load is the replica's in-flight requests at the
// router (sent, response not finished). With m requests in flight over n eligible
// replicas, the bound is capacity = ceil(c * (m + 1) / n): a replica takes the request
// only while load + 1 <= capacity, so the busiest replica never exceeds c x the mean
// (+1 for rounding), and a key moves off its home replica only when that one is full.
// Plain data, no locks: the caller snapshots the loads.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace strata::router {

class HashRing {
 public:
  // `names` identify replicas (their URLs); the ring depends only on them and `vnodes`.
  HashRing(const std::vector<std::string>& names, int vnodes);

  // Replica index for `key`; `eligible[i]` false skips replica i; `loads[i]` is its
  // in-flight count; `load_factor` c >= 1 (infinity: pure affinity, no bound).
  // nullopt when no replica is eligible.
  std::optional<size_t> pick(uint64_t key, const std::vector<uint32_t>& loads,
                             const std::vector<bool>& eligible, double load_factor) const;

  // The home replica ignoring load (the first eligible point clockwise).
  std::optional<size_t> home(uint64_t key, const std::vector<bool>& eligible) const;

  size_t points() const { return ring_.size(); }

  static constexpr double kUnbounded = std::numeric_limits<double>::infinity();

 private:
  struct Point {
    uint64_t hash;
    uint32_t replica;
  };
  std::vector<Point> ring_;  // sorted by hash
  size_t n_replicas_ = 0;
};

// capacity = ceil(c * (total + 1) / n) in exact arithmetic for finite c; the largest
// value for an infinite c.
uint64_t chwbl_capacity(uint64_t total_in_flight, size_t n_eligible, double load_factor);

}  // namespace strata::router
