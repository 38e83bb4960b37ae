// `strata router`: an OpenAI-compatible front (server/http_server.h) over strata serve
// replicas. Each generation request gets a replica (a sticky session's pin when that
// replica is healthy and within the load bound, else the policy of policy.h with the
// prefix key of prefix_key.h), is relayed by a bounded pool of workers (worker_pool.h,
// upstream.h), and is retried on another replica when the connection fails or the
// replica answers 503 before any byte reached the client. A replica failing
// `eject_after` times in a row is ejected for `cooldown_s`, then readmitted when a
// /health probe answers 200. A stream that breaks mid-way ends with an SSE error event
// and [DONE]. The replica set can change at run time (reload(): --replica-file);
// replicas that leave drain. /metrics carries an autoscaling signal (capacity.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "router/capacity.h"
#include "router/pd_route.h"
#include "router/policy.h"
#include "router/prefix_key.h"
#include "router/upstream.h"
#include "server/http_types.h"

namespace strata::router {

struct RouterConfig {
  std::vector<std::string> replicas;  // http://HOST:PORT (--replica)
  std::string replica_file;           // more replicas, one per line; re-read by reload()
  PolicyKind policy = PolicyKind::kPrefix;
  double load_factor = 1.25;
  int vnodes = 160;
  PrefixKeyConfig prefix;  // model_path empty: no keys (prefix falls back to least-load)
  int max_attempts = 3;    // replicas tried per request
  int eject_after = 3;     // consecutive failures
  double cooldown_s = 5;   // ejected this long before a probe may readmit
  double probe_interval_s = 1;
  UpstreamTimeouts timeouts;
  std::string session_header = "x-session-id";  // lower case; empty: no sticky sessions
  size_t max_sessions = 65536;                  // pinned sessions kept (LRU beyond)
  size_t max_connections = 256;                 // relay workers (concurrent upstream exchanges)
  size_t max_queue = 1024;                      // requests waiting for a worker; more: 503
  CapacityConfig capacity;
  // Prefill/decode disaggregation (pd_route.h): empty = off.
  std::vector<std::string> prefill_replicas;
};

class Router {
 public:
  explicit Router(RouterConfig config);  // throws strata::Error on a bad config
  ~Router();                             // stops the prober; waits for running relays
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  void handle(server::HttpRequest request, std::shared_ptr<server::Responder> responder);
  std::string metrics_text() const;

  // Re-reads --replica-file: new replicas join the ring, missing ones drain (no new
  // requests; removed once their last request ends). Throws strata::Error (the set is
  // unchanged) when the file cannot be read or parsed or would leave no replica.
  void reload();
  // The replicas taking new requests, in table order (draining ones excluded).
  std::vector<std::string> active_replicas() const;

  struct State;  // the replica table and counters, shared with the relay threads

 private:
  std::shared_ptr<State> state_;
  struct Workers;
  std::unique_ptr<Workers> workers_;
};

}  // namespace strata::router
