// `strata router`: an OpenAI-compatible front (server/http_server.h) over strata serve
// replicas. Each generation request gets a replica from the policy (policy.h, with the
// prefix key of prefix_key.h), is relayed on a worker thread (upstream.h), and is
// retried on another replica when the connection fails or the replica answers 503 before
// any byte reached the client. A replica failing `eject_after` times in a row is ejected
// for `cooldown_s`, then readmitted when a /health probe answers 200. A stream that
// breaks mid-way ends with an SSE error event and [DONE].
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "router/pd_route.h"
#include "router/policy.h"
#include "router/prefix_key.h"
#include "router/upstream.h"
#include "server/http_types.h"

namespace strata::router {

struct RouterConfig {
  std::vector<std::string> replicas;  // http://HOST:PORT
  PolicyKind policy = PolicyKind::kPrefix;
  double load_factor = 1.25;
  int vnodes = 160;
  PrefixKeyConfig prefix;  // model_path empty: no keys (prefix falls back to least-load)
  int max_attempts = 3;    // replicas tried per request
  int eject_after = 3;     // consecutive failures
  double cooldown_s = 5;   // ejected this long before a probe may readmit
  double probe_interval_s = 1;
  UpstreamTimeouts timeouts;
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

  struct State;  // the replica table and counters, shared with the relay threads

 private:
  std::shared_ptr<State> state_;
};

}  // namespace strata::router
