// Prefill/decode disaggregation at the router (docs/DISAGGREGATION.md): before a
// generation request goes to the decode replica the policy chose, a prefill replica
// (round robin over --prefill-replica) is asked to prefill it and send the prompt's KV
// blocks to that decode replica (POST /internal/kv/prefill with "kv_target", the
// decode replica's receiver from its GET /internal/kv/info, cached, and "route":
// {"decode_held_blocks"} from the decode replica's POST /internal/kv/lookup). The request then
// goes to the decode replica as usual, which finds the prompt in its prefix cache. Any
// failure (a prefill replica down, no receiver, a refused import, a recompute decision)
// only means the decode replica computes the prompt itself.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "loadgen/http_client.h"
#include "router/upstream.h"

namespace strata::router {

struct PdRouteConfig {
  std::vector<std::string> prefill_replicas;  // http://HOST:PORT
  UpstreamTimeouts timeouts;
  double info_ttl_s = 30;  // how long a decode replica's /internal/kv/info is reused
};

class PdRoute {
 public:
  explicit PdRoute(PdRouteConfig config);  // throws strata::Error on a bad URL

  // What happened before the decode request (for the log and the metrics).
  struct Outcome {
    std::string decision;  // "transfer", "recompute" or "skipped"
    std::string error;     // why it was skipped
  };
  // Blocking; runs on the request's relay thread. Never throws.
  Outcome before_decode(const std::string& body, const loadgen::Url& decode);

  std::string metrics_text() const;

 private:
  // The decode replica's KV receiver HOST:PORT ("" when it has none); throws on failure.
  std::string kv_target(const loadgen::Url& decode);

  PdRouteConfig config_;
  std::vector<loadgen::Url> prefill_;
  mutable std::mutex mutex_;
  size_t next_ = 0;
  struct Info {
    std::string kv_listen;
    double fetched_s = 0;
  };
  std::map<std::string, Info> info_;  // by decode host:port
  uint64_t transfers_ = 0, recomputes_ = 0, skipped_ = 0;
};

}  // namespace strata::router
