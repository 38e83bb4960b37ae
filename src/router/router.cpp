#include "router/router.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_set>

#include "core/clock.h"
#include "core/error.h"
#include "loadgen/http_client.h"
#include "server/api_error.h"

namespace strata::router {
namespace {

struct Replica {
  std::string name;
  loadgen::Url url;
  uint32_t in_flight = 0;
  uint64_t routed = 0, prefix_hits = 0, failures = 0, ejections = 0, completed = 0;
  int consecutive_failures = 0;
  bool ejected = false;
  double ejected_at = 0;
  std::unordered_set<uint64_t> keys;  // prefix keys sent here (bounded; see remember)
};

constexpr size_t kMaxKeysPerReplica = 1 << 16;

}  // namespace

struct Router::State {
  RouterConfig config;
  std::unique_ptr<PrefixKeyer> keyer;
  mutable std::mutex mutex;
  std::condition_variable idle;
  std::vector<Replica> replicas;
  Policy policy;
  uint64_t retries = 0, queued = 0, no_replica = 0, stream_errors = 0, keyed = 0;
  double busy_seconds = 0;  // summed request durations, for the capacity estimate
  uint64_t finished = 0;
  int relays = 0;  // worker threads running
  bool stopping = false;
  std::thread prober;
  std::unique_ptr<PdRoute> pd;  // PD: --prefill-replica given

  explicit State(RouterConfig c)
      : config(std::move(c)),
        policy(config.policy, config.replicas, config.vnodes, config.load_factor) {
    if (config.replicas.empty()) throw Error("--replica: at least one is needed");
    for (const std::string& r : config.replicas) {
      Replica rep;
      rep.name = r;
      rep.url = loadgen::parse_base_url(r);
      replicas.push_back(std::move(rep));
    }
    if (!config.prefix.model_path.empty()) keyer = std::make_unique<PrefixKeyer>(config.prefix);
    // PD hook (pd_route.h).
    if (!config.prefill_replicas.empty())
      pd = std::make_unique<PdRoute>(PdRouteConfig{config.prefill_replicas, config.timeouts});
  }

  // Picks a replica not in `tried`, counts it in flight; nullopt when none is left.
  std::optional<size_t> acquire(std::optional<uint64_t> key, const std::vector<bool>& tried) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<ReplicaLoad> loads(replicas.size());
    for (size_t i = 0; i < replicas.size(); ++i)
      loads[i] = {!replicas[i].ejected && !tried[i], replicas[i].in_flight};
    const auto pick = policy.pick(loads, key);
    if (!pick) return std::nullopt;
    Replica& r = replicas[*pick];
    ++r.in_flight;
    ++r.routed;
    if (key) {
      if (r.keys.count(*key)) ++r.prefix_hits;
      if (r.keys.size() >= kMaxKeysPerReplica) r.keys.clear();  // forget, not grow
      r.keys.insert(*key);
    }
    return pick;
  }

  void release(size_t i, bool failed, double seconds) {
    std::lock_guard<std::mutex> lock(mutex);
    Replica& r = replicas[i];
    --r.in_flight;
    if (!failed) {
      r.consecutive_failures = 0;
      ++r.completed;
      busy_seconds += seconds;
      ++finished;
      return;
    }
    ++r.failures;
    if (++r.consecutive_failures >= config.eject_after && !r.ejected) {
      r.ejected = true;
      r.ejected_at = steady_now_s();
      ++r.ejections;
      std::fprintf(stderr, "strata router: ejected %s after %d failures\n", r.name.c_str(),
                   r.consecutive_failures);
    }
  }

  void probe_loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      idle.wait_for(lock, std::chrono::duration<double>(config.probe_interval_s));
      if (stopping) break;
      std::vector<size_t> todo;
      for (size_t i = 0; i < replicas.size(); ++i) todo.push_back(i);
      lock.unlock();
      for (size_t i : todo) probe(i);
      lock.lock();
    }
  }

  // Active health check: a failed probe counts like a failed request; a 200 readmits an
  // ejected replica once its cool-down has passed.
  void probe(size_t i) {
    const loadgen::Url url = replicas[i].url;  // immutable after construction
    UpstreamTimeouts t{1.0, 1.0, 1.0};
    int status = 0;
    const UpstreamResult res = upstream_exchange(
        url.host, url.port, "GET", url.base_path + "/health", "", t,
        [&](const UpstreamHead& h) {
          status = h.status;
          return true;
        },
        [](std::string_view) {});
    std::lock_guard<std::mutex> lock(mutex);
    Replica& r = replicas[i];
    const bool ok = res.failure == UpstreamFailure::kNone && status == 200;
    if (ok && r.ejected && steady_now_s() - r.ejected_at >= config.cooldown_s) {
      r.ejected = false;
      r.consecutive_failures = 0;
      std::fprintf(stderr, "strata router: readmitted %s\n", r.name.c_str());
    } else if (!ok && !r.ejected) {
      if (++r.consecutive_failures >= config.eject_after) {
        r.ejected = true;
        r.ejected_at = steady_now_s();
        ++r.ejections;
        std::fprintf(stderr, "strata router: ejected %s (health probe)\n", r.name.c_str());
      }
    } else if (!ok) {
      r.ejected_at = std::max(r.ejected_at, steady_now_s() - config.cooldown_s);
    }
  }
};

namespace {

void send_error(server::Responder& r, int status, const std::string& message,
                const std::string& code = {}) {
  r.send({status,
          "application/json",
          server::error_body(server::ApiError(status, message, {}, code)),
          {}});
}

// Relays one generation request with retries; runs on its own worker thread.
void relay(const std::shared_ptr<Router::State>& s, server::HttpRequest req,
           std::shared_ptr<server::Responder> out, std::optional<uint64_t> key) {
  std::vector<bool> tried(s->replicas.size(), false);
  bool started = false;  // a byte reached the client: no retry from here on
  std::string last_error = "no replica available";
  for (int attempt = 0; attempt < s->config.max_attempts; ++attempt) {
    const auto pick = s->acquire(key, tried);
    if (!pick) break;
    tried[*pick] = true;
    if (attempt > 0) {
      std::lock_guard<std::mutex> lock(s->mutex);
      ++s->retries;
    }
    const loadgen::Url& url = s->replicas[*pick].url;
    // PD hook (pd_route.h): a prefill replica sends the prompt's KV to this replica first.
    if (s->pd && attempt == 0 && req.method == "POST") s->pd->before_decode(req.body, url);
    const double t0 = steady_now_s();
    bool retryable_status = false;
    const UpstreamResult res = upstream_exchange(
        url.host, url.port, req.method, url.base_path + req.target, req.body, s->config.timeouts,
        [&](const UpstreamHead& h) {
          if (h.status == 503) {  // loading or draining: another replica may take it
            retryable_status = true;
            return false;
          }
          started = true;
          out->start_stream(h.status, h.content_type.empty() ? "application/json" : h.content_type);
          return true;
        },
        [&](std::string_view bytes) { out->write(std::string(bytes)); });
    const bool failed = res.failure != UpstreamFailure::kNone || retryable_status;
    s->release(*pick, failed && !retryable_status, steady_now_s() - t0);
    if (!failed) {
      out->finish();
      return;
    }
    last_error = retryable_status ? s->replicas[*pick].name + " answered 503" : res.error;
    if (started) {
      // Mid-stream: the client has part of an answer; end it with an error event.
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        ++s->stream_errors;
      }
      const std::string err = server::error_body(
          server::ApiError(502, "the replica's stream broke off: " + last_error));
      out->write("data: " + err + "\n\ndata: [DONE]\n\n");
      out->finish();
      return;
    }
    if (res.failure == UpstreamFailure::kBody) break;  // unreachable: started is set first
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    ++s->no_replica;
  }
  send_error(*out, 503, "no replica could take the request: " + last_error, "no_replica");
}

}  // namespace

Router::Router(RouterConfig config) : state_(std::make_shared<State>(std::move(config))) {
  state_->prober = std::thread([s = state_.get()] { s->probe_loop(); });
}

Router::~Router() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->idle.notify_all();
  state_->prober.join();
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->idle.wait_for(lock, std::chrono::seconds(30), [&] { return state_->relays == 0; });
}

void Router::handle(server::HttpRequest req, std::shared_ptr<server::Responder> out) {
  const std::string path = req.path();
  if (req.rejected) return send_error(*out, req.rejected, "malformed or oversized request");
  if (path == "/health") {
    std::lock_guard<std::mutex> lock(state_->mutex);
    bool any = false;
    for (const Replica& r : state_->replicas) any = any || !r.ejected;
    return out->send({any ? 200 : 503,
                      "application/json",
                      any ? "{\"status\":\"ok\"}" : "{\"status\":\"no_replica\"}",
                      {}});
  }
  if (path == "/metrics") return out->send({200, "text/plain; version=0.0.4", metrics_text(), {}});
  const bool chat = path == "/v1/chat/completions";
  const bool gen = chat || path == "/v1/completions";
  if (!gen && path != "/v1/models") return send_error(*out, 404, "no route " + path, "not_found");
  if (gen && req.method != "POST") return send_error(*out, 405, path + ": use POST");
  std::optional<uint64_t> key;
  if (gen && state_->keyer && state_->config.policy == PolicyKind::kPrefix) {
    try {
      const auto k = state_->keyer->key(nlohmann::json::parse(req.body), chat);
      if (k) key = k->route_hash();
    } catch (const server::ApiError& e) {
      return out->send({e.status(), "application/json", server::error_body(e), {}});
    } catch (const std::exception& e) {
      return send_error(*out, 400, std::string("body: ") + e.what());
    }
  }
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->relays;
    if (key) ++state_->keyed;
  }
  std::thread([s = state_, req = std::move(req), out = std::move(out), key]() mutable {
    relay(s, std::move(req), std::move(out), key);
    std::lock_guard<std::mutex> lock(s->mutex);
    --s->relays;
    s->idle.notify_all();
  }).detach();
}

std::string Router::metrics_text() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string m;
  auto line = [&](const std::string& name, const std::string& labels, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    m += name + (labels.empty() ? "" : "{" + labels + "}") + " " + buf + "\n";
  };
  m += "# TYPE strata_router_in_flight gauge\n";
  uint64_t in_flight = 0, hits = 0;
  size_t healthy = 0;
  for (const Replica& r : s.replicas) {
    const std::string l = "replica=\"" + r.name + "\"";
    line("strata_router_in_flight", l, r.in_flight);
    line("strata_router_routed_total", l, static_cast<double>(r.routed));
    line("strata_router_prefix_hits_total", l, static_cast<double>(r.prefix_hits));
    line("strata_router_failures_total", l, static_cast<double>(r.failures));
    line("strata_router_ejections_total", l, static_cast<double>(r.ejections));
    line("strata_router_replica_up", l, r.ejected ? 0 : 1);
    in_flight += r.in_flight;
    hits += r.prefix_hits;
    healthy += r.ejected ? 0 : 1;
  }
  line("strata_router_prefix_hit_share", "", s.keyed ? static_cast<double>(hits) / s.keyed : 0);
  line("strata_router_retries_total", "", static_cast<double>(s.retries));
  line("strata_router_stream_errors_total", "", static_cast<double>(s.stream_errors));
  line("strata_router_unrouted_total", "", static_cast<double>(s.no_replica));
  // Autoscaling input (docs/ROUTER.md): the requests in flight at the router.
  line("strata_router_queue_length", "", static_cast<double>(in_flight));
  line("strata_router_healthy_replicas", "", static_cast<double>(healthy));
  if (s.pd) m += s.pd->metrics_text();  // PD hook
  return m;
}

}  // namespace strata::router
