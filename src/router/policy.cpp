#include "router/policy.h"

#include "core/error.h"

namespace strata::router {

PolicyKind parse_policy(const std::string& name) {
  if (name == "round-robin") return PolicyKind::kRoundRobin;
  if (name == "least-load") return PolicyKind::kLeastLoad;
  if (name == "prefix") return PolicyKind::kPrefix;
  throw Error("--policy: expected round-robin, least-load or prefix, got '" + name + "'");
}

Policy::Policy(PolicyKind kind, const std::vector<std::string>& names, int vnodes,
               double load_factor)
    : kind_(kind), ring_(names, vnodes), load_factor_(load_factor) {
  if (!(load_factor >= 1.0)) throw Error("--load-factor: must be >= 1 (inf: no bound)");
}

std::optional<size_t> least_loaded(const std::vector<ReplicaLoad>& replicas) {
  std::optional<size_t> best;
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (!replicas[i].eligible) continue;
    if (!best || replicas[i].in_flight < replicas[*best].in_flight) best = i;
  }
  return best;
}

std::optional<size_t> Policy::pick(const std::vector<ReplicaLoad>& replicas,
                                   std::optional<uint64_t> key) {
  if (kind_ == PolicyKind::kRoundRobin) {
    for (size_t step = 0; step < replicas.size(); ++step) {
      const size_t i = (next_ + step) % replicas.size();
      if (replicas[i].eligible) {
        next_ = i + 1;
        return i;
      }
    }
    return std::nullopt;
  }
  if (kind_ == PolicyKind::kLeastLoad || !key) return least_loaded(replicas);
  std::vector<uint32_t> loads(replicas.size());
  std::vector<bool> eligible(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    loads[i] = replicas[i].in_flight;
    eligible[i] = replicas[i].eligible;
  }
  return ring_.pick(*key, loads, eligible, load_factor_);
}

}  // namespace strata::router
