// The few gauges and counters of a replica's own /metrics (strata serve's Prometheus
// text) that the router scrapes with its health probe: engine sequences running and
// waiting (the autoscaling signal, capacity.h) and the prefix cache's token counters
// (the replica's true hit share, beside the router's estimate).
#pragma once

#include <optional>
#include <string_view>

namespace strata::router {

struct ReplicaGauges {
  double running = 0, waiting = 0;
  double prefix_query_tokens = 0, prefix_hit_tokens = 0;
};

// nullopt unless both strata:num_requests_running and strata:num_requests_waiting are
// present with finite values; the prefix counters default to 0. Never throws.
std::optional<ReplicaGauges> parse_replica_metrics(std::string_view text);

}  // namespace strata::router
