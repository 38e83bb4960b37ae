// Which replica takes a request: round-robin, least-load (fewest in-flight requests at
// the router; ties to the lowest index), or prefix (CHWBL over the request's prefix key,
// hash_ring.h). Plain data in, an index out; the caller holds the replica table's lock
// and passes a snapshot.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "router/hash_ring.h"

namespace strata::router {

enum class PolicyKind { kRoundRobin, kLeastLoad, kPrefix };

// "round-robin" | "least-load" | "prefix"; throws strata::Error naming --policy.
PolicyKind parse_policy(const std::string& name);

struct ReplicaLoad {
  bool eligible = false;  // healthy and of the wanted role
  uint32_t in_flight = 0;
};

class Policy {
 public:
  Policy(PolicyKind kind, const std::vector<std::string>& names, int vnodes, double load_factor);

  // `key`: the request's prefix key (prefix policy; a request without one, e.g. a prompt
  // shorter than a block, goes least-load). nullopt when no replica is eligible.
  std::optional<size_t> pick(const std::vector<ReplicaLoad>& replicas, std::optional<uint64_t> key);

  PolicyKind kind() const { return kind_; }

 private:
  PolicyKind kind_;
  HashRing ring_;
  double load_factor_;
  size_t next_ = 0;  // round-robin cursor
};

std::optional<size_t> least_loaded(const std::vector<ReplicaLoad>& replicas);

}  // namespace strata::router
