// The router's autoscaling signal. Demand is the number of requests the router holds
// (in flight at replicas plus waiting for a relay worker), smoothed by an exponential
// moving average over `window_s`. A replica's capacity is the largest number of
// sequences its engine ran at once while it still had sequences waiting (from the
// replica's own /metrics: strata:num_requests_running while
// strata:num_requests_waiting > 0), i.e. the most it sustains before it queues. Until a
// replica has been seen saturated its capacity is `default_capacity` when set, else the
// most it has been seen running (a lower bound, so the advice errs towards more
// replicas). recommended = ceil(demand / mean capacity), at least 1.
// Plain data, no clock of its own: the caller passes time and samples.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace strata::router {

struct CapacityConfig {
  double window_s = 30;         // EWMA time constant of the demand
  double default_capacity = 0;  // sequences per replica before any saturation is seen
};

class CapacityEstimator {
 public:
  explicit CapacityEstimator(CapacityConfig config);

  // The router's held requests at time `now_s` (seconds, any monotonic origin).
  void observe_demand(double now_s, double held);
  // One scrape of replica `name`'s engine gauges.
  void observe_replica(const std::string& name, double running, double waiting);
  void forget_replica(const std::string& name);

  double demand() const { return demand_; }  // smoothed
  // Mean capacity over the replicas seen (0 when none is known).
  double per_replica_capacity() const;
  // ceil(demand / capacity), at least 1; 0 when no capacity is known yet.
  uint64_t recommended() const;

 private:
  struct Seen {
    double saturated = 0;    // most running while some waited
    double max_running = 0;  // most running at all
  };
  CapacityConfig config_;
  double demand_ = 0, last_s_ = 0;
  bool started_ = false;
  std::map<std::string, Seen> replicas_;
};

}  // namespace strata::router
