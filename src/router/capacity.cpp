#include "router/capacity.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace strata::router {

CapacityEstimator::CapacityEstimator(CapacityConfig config) : config_(config) {
  if (!(config_.window_s > 0)) throw Error("--scale-window: must be > 0 seconds");
  if (!(config_.default_capacity >= 0)) throw Error("--replica-capacity: must be >= 0");
}

void CapacityEstimator::observe_demand(double now_s, double held) {
  if (!started_) {
    started_ = true;
    demand_ = held;
  } else {
    const double dt = std::max(0.0, now_s - last_s_);
    const double a = 1.0 - std::exp(-dt / config_.window_s);
    demand_ += a * (held - demand_);
  }
  last_s_ = now_s;
}

void CapacityEstimator::observe_replica(const std::string& name, double running, double waiting) {
  if (!(running >= 0) || !(waiting >= 0)) return;  // a bad scrape says nothing
  Seen& s = replicas_[name];
  s.max_running = std::max(s.max_running, running);
  if (waiting > 0 && running > 0) s.saturated = std::max(s.saturated, running);
}

void CapacityEstimator::forget_replica(const std::string& name) {
  replicas_.erase(name);
}

double CapacityEstimator::per_replica_capacity() const {
  double sum = 0;
  size_t n = 0;
  for (const auto& [name, s] : replicas_) {
    double c = s.saturated;
    if (c == 0) c = config_.default_capacity > 0 ? config_.default_capacity : s.max_running;
    if (c > 0) {
      sum += c;
      ++n;
    }
  }
  if (n == 0) return config_.default_capacity;
  return sum / static_cast<double>(n);
}

uint64_t CapacityEstimator::recommended() const {
  const double c = per_replica_capacity();
  if (!(c > 0)) return 0;
  // A hair below an integer ratio does not round up (EWMA tails).
  const double r = std::ceil(demand_ / c - 1e-6);
  return static_cast<uint64_t>(std::max(1.0, r));
}

}  // namespace strata::router
