#include "router/router.h"

#include <algorithm>
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
#include "router/hash_ring.h"
#include "router/replica_metrics.h"
#include "router/replica_set.h"
#include "router/session_table.h"
#include "router/worker_pool.h"
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
  bool draining = false;  // left the replica set: no new requests, removed when idle
  double ejected_at = 0;
  std::optional<ReplicaGauges> scraped;  // its own /metrics, last probe
  std::unordered_set<uint64_t> keys;     // prefix keys sent here (bounded; see acquire)
};

using ReplicaPtr = std::shared_ptr<Replica>;

constexpr size_t kMaxKeysPerReplica = 1 << 16;

ReplicaPtr make_replica(const std::string& name) {
  auto r = std::make_shared<Replica>();
  r->name = name;
  r->url = loadgen::parse_base_url(name);
  return r;
}

}  // namespace

struct Router::State {
  RouterConfig config;
  std::unique_ptr<PrefixKeyer> keyer;
  mutable std::mutex mutex;
  std::condition_variable wake;  // the prober's sleep
  // The table: active replicas and draining ones. Relays hold their replica's pointer,
  // so an entry may leave the table while a request on it runs.
  std::vector<ReplicaPtr> replicas;
  Policy policy;  // over `replicas`' names, rebuilt when the table changes
  SessionTable sessions;
  CapacityEstimator capacity;
  uint64_t retries = 0, no_replica = 0, stream_errors = 0, keyed = 0;
  uint64_t sticky_hits = 0, rejected = 0, reloads = 0;
  size_t queued = 0;  // requests waiting for a relay worker
  bool stopping = false;
  std::thread prober;
  std::unique_ptr<PdRoute> pd;  // PD: --prefill-replica given

  explicit State(RouterConfig c)
      : config(std::move(c)),
        policy(config.policy, {}, config.vnodes, config.load_factor),
        sessions(config.session_header.empty() ? 0 : config.max_sessions),
        capacity(config.capacity) {
    std::vector<std::string> names = config.replicas;
    if (!config.replica_file.empty())
      names = merge_replicas(config.replicas, read_replica_file(config.replica_file));
    if (names.empty()) throw Error("--replica: at least one is needed (or --replica-file)");
    if (config.max_attempts < 1) throw Error("--max-attempts: must be at least 1");
    for (const std::string& r : names) replicas.push_back(make_replica(r));
    rebuild_policy();
    if (!config.prefix.model_path.empty()) keyer = std::make_unique<PrefixKeyer>(config.prefix);
    // PD hook (pd_route.h).
    if (!config.prefill_replicas.empty())
      pd = std::make_unique<PdRoute>(PdRouteConfig{config.prefill_replicas, config.timeouts});
  }

  // Caller holds `mutex` (or is the constructor).
  void rebuild_policy() {
    std::vector<std::string> names;
    for (const ReplicaPtr& r : replicas) names.push_back(r->name);
    policy = Policy(config.policy, names, config.vnodes, config.load_factor);
  }

  std::vector<std::string> active_names() const {
    std::vector<std::string> names;
    for (const ReplicaPtr& r : replicas)
      if (!r->draining) names.push_back(r->name);
    return names;
  }

  // Applies a new replica list: joins and drains. Caller holds `mutex`.
  void apply(const std::vector<std::string>& wanted) {
    const ReplicaChange change = diff_replicas(active_names(), wanted);
    for (const std::string& name : change.added) {
      const auto it = std::find_if(replicas.begin(), replicas.end(),
                                   [&](const ReplicaPtr& r) { return r->name == name; });
      if (it != replicas.end()) {
        (*it)->draining = false;  // left and came back before it drained
      } else {
        replicas.push_back(make_replica(name));
      }
      std::fprintf(stderr, "strata router: replica %s joined\n", name.c_str());
    }
    for (const std::string& name : change.removed) {
      for (const ReplicaPtr& r : replicas)
        if (r->name == name) r->draining = true;
      sessions.forget_replica(name);
      std::fprintf(stderr, "strata router: replica %s leaves (draining)\n", name.c_str());
    }
    ++reloads;
    erase_drained();
    rebuild_policy();
  }

  // Drops draining replicas with nothing in flight. Caller holds `mutex`; true when the
  // table changed (the caller rebuilds the policy).
  bool erase_drained() {
    const size_t before = replicas.size();
    for (const ReplicaPtr& r : replicas)
      if (r->draining && r->in_flight == 0) {
        capacity.forget_replica(r->name);
        std::fprintf(stderr, "strata router: replica %s drained\n", r->name.c_str());
      }
    std::erase_if(replicas, [](const ReplicaPtr& r) { return r->draining && r->in_flight == 0; });
    return replicas.size() != before;
  }

  bool eligible(const Replica& r, const std::vector<const Replica*>& tried) const {
    return !r.ejected && !r.draining && std::find(tried.begin(), tried.end(), &r) == tried.end();
  }

  // The session's pinned replica when it is eligible and within the CHWBL bound (the
  // same bound as the prefix policy's). Caller holds `mutex`.
  ReplicaPtr sticky_pick(const std::string& session, const std::vector<const Replica*>& tried) {
    const auto pinned = sessions.find(session);
    if (!pinned) return nullptr;
    ReplicaPtr found;
    uint64_t total = 0;
    size_t n = 0;
    for (const ReplicaPtr& r : replicas) {
      if (!eligible(*r, tried)) continue;
      total += r->in_flight;
      ++n;
      if (r->name == *pinned) found = r;
    }
    if (!found) return nullptr;
    if (uint64_t{found->in_flight} + 1 > chwbl_capacity(total, n, config.load_factor))
      return nullptr;
    return found;
  }

  // Picks a replica not in `tried`, counts it in flight; null when none is left.
  ReplicaPtr acquire(std::optional<uint64_t> key, const std::string& session,
                     const std::vector<const Replica*>& tried) {
    std::lock_guard<std::mutex> lock(mutex);
    ReplicaPtr pick;
    if (!session.empty()) pick = sticky_pick(session, tried);
    if (pick) {
      ++sticky_hits;
    } else {
      std::vector<ReplicaLoad> loads(replicas.size());
      for (size_t i = 0; i < replicas.size(); ++i)
        loads[i] = {eligible(*replicas[i], tried), replicas[i]->in_flight};
      const auto i = policy.pick(loads, key);
      if (!i) return nullptr;
      pick = replicas[*i];
      if (!session.empty()) sessions.pin(session, pick->name);
    }
    Replica& r = *pick;
    ++r.in_flight;
    ++r.routed;
    if (key) {
      if (r.keys.count(*key)) ++r.prefix_hits;
      if (r.keys.size() >= kMaxKeysPerReplica) r.keys.clear();  // forget, not grow
      r.keys.insert(*key);
    }
    return pick;
  }

  void eject(Replica& r, const char* why) {
    r.ejected = true;
    r.ejected_at = steady_now_s();
    ++r.ejections;
    std::fprintf(stderr, "strata router: ejected %s (%s)\n", r.name.c_str(), why);
  }

  void release(const ReplicaPtr& p, bool failed) {
    std::lock_guard<std::mutex> lock(mutex);
    Replica& r = *p;
    --r.in_flight;
    if (r.draining && r.in_flight == 0 && erase_drained()) rebuild_policy();
    if (!failed) {
      r.consecutive_failures = 0;
      ++r.completed;
      return;
    }
    ++r.failures;
    if (++r.consecutive_failures >= config.eject_after && !r.ejected) eject(r, "failures");
  }

  void probe_loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      wake.wait_for(lock, std::chrono::duration<double>(config.probe_interval_s));
      if (stopping) break;
      uint64_t held = queued;
      for (const ReplicaPtr& r : replicas) held += r->in_flight;
      capacity.observe_demand(steady_now_s(), static_cast<double>(held));
      const std::vector<ReplicaPtr> todo = replicas;
      lock.unlock();
      for (const ReplicaPtr& r : todo) probe(r);
      lock.lock();
    }
  }

  // Active health check: a failed probe counts like a failed request; a 200 readmits an
  // ejected replica once its cool-down has passed. A healthy replica's /metrics feeds
  // the capacity estimate.
  void probe(const ReplicaPtr& p) {
    const loadgen::Url& url = p->url;  // immutable
    const UpstreamTimeouts t{1.0, 1.0, 1.0};
    auto get = [&](const std::string& path, std::string* body) {
      int status = 0;
      const UpstreamResult res = upstream_exchange(
          url.host, url.port, "GET", url.base_path + path, "", t,
          [&](const UpstreamHead& h) {
            status = h.status;
            return true;
          },
          [&](std::string_view bytes) {
            if (body && body->size() < (1u << 20)) body->append(bytes);
          });
      return res.failure == UpstreamFailure::kNone ? status : 0;
    };
    const bool ok = get("/health", nullptr) == 200;
    std::string text;
    std::optional<ReplicaGauges> gauges;
    if (ok && get("/metrics", &text) == 200) gauges = parse_replica_metrics(text);
    std::lock_guard<std::mutex> lock(mutex);
    Replica& r = *p;
    r.scraped = gauges;
    if (gauges && !r.draining) capacity.observe_replica(r.name, gauges->running, gauges->waiting);
    if (ok && r.ejected && steady_now_s() - r.ejected_at >= config.cooldown_s) {
      r.ejected = false;
      r.consecutive_failures = 0;
      std::fprintf(stderr, "strata router: readmitted %s\n", r.name.c_str());
    } else if (!ok && !r.ejected) {
      if (++r.consecutive_failures >= config.eject_after) eject(r, "health probe");
    } else if (!ok) {
      r.ejected_at = std::max(r.ejected_at, steady_now_s() - config.cooldown_s);
    }
  }
};

struct Router::Workers {
  WorkerPool pool;
  Workers(size_t n, size_t q) : pool(n, q) {}
};

namespace {

void send_error(server::Responder& r, int status, const std::string& message,
                const std::string& code = {}) {
  r.send({status,
          "application/json",
          server::error_body(server::ApiError(status, message, {}, code)),
          {}});
}

// Relays one generation request with retries; runs on a relay worker.
void relay(const std::shared_ptr<Router::State>& s, const server::HttpRequest& req,
           server::Responder& out, std::optional<uint64_t> key, const std::string& session) {
  std::vector<const Replica*> tried;
  bool started = false;  // a byte reached the client: no retry from here on
  std::string last_error = "no replica available";
  for (int attempt = 0; attempt < s->config.max_attempts; ++attempt) {
    const ReplicaPtr rep = s->acquire(key, session, tried);
    if (!rep) break;
    tried.push_back(rep.get());
    if (attempt > 0) {
      std::lock_guard<std::mutex> lock(s->mutex);
      ++s->retries;
    }
    const loadgen::Url& url = rep->url;
    // PD hook (pd_route.h): a prefill replica sends the prompt's KV to this replica first.
    if (s->pd && attempt == 0 && req.method == "POST") s->pd->before_decode(req.body, url);
    bool retryable_status = false;
    const UpstreamResult res = upstream_exchange(
        url.host, url.port, req.method, url.base_path + req.target, req.body, s->config.timeouts,
        [&](const UpstreamHead& h) {
          if (h.status == 503) {  // loading or draining: another replica may take it
            retryable_status = true;
            return false;
          }
          started = true;
          out.start_stream(h.status, h.content_type.empty() ? "application/json" : h.content_type);
          return true;
        },
        [&](std::string_view bytes) { out.write(std::string(bytes)); });
    const bool failed = res.failure != UpstreamFailure::kNone || retryable_status;
    s->release(rep, failed && !retryable_status);
    if (!failed) {
      out.finish();
      return;
    }
    last_error = retryable_status ? rep->name + " answered 503" : res.error;
    if (started) {
      // Mid-stream: the client has part of an answer; end it with an error event.
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        ++s->stream_errors;
      }
      const std::string err = server::error_body(
          server::ApiError(502, "the replica's stream broke off: " + last_error));
      out.write("data: " + err + "\n\ndata: [DONE]\n\n");
      out.finish();
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    ++s->no_replica;
  }
  send_error(out, 503, "no replica could take the request: " + last_error, "no_replica");
}

}  // namespace

Router::Router(RouterConfig config) : state_(std::make_shared<State>(std::move(config))) {
  workers_ = std::make_unique<Workers>(state_->config.max_connections, state_->config.max_queue);
  state_->prober = std::thread([s = state_.get()] { s->probe_loop(); });
}

Router::~Router() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->wake.notify_all();
  state_->prober.join();
  workers_->pool.stop(30);
}

void Router::reload() {
  State& s = *state_;
  if (s.config.replica_file.empty()) throw Error("reload: no --replica-file");
  const std::vector<std::string> wanted =
      merge_replicas(s.config.replicas, read_replica_file(s.config.replica_file));
  if (wanted.empty()) throw Error(s.config.replica_file + ": no replica left; set unchanged");
  std::lock_guard<std::mutex> lock(s.mutex);
  s.apply(wanted);
}

std::vector<std::string> Router::active_replicas() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->active_names();
}

void Router::handle(server::HttpRequest req, std::shared_ptr<server::Responder> out) {
  const std::string path = req.path();
  if (req.rejected) return send_error(*out, req.rejected, "malformed or oversized request");
  if (path == "/health") {
    std::lock_guard<std::mutex> lock(state_->mutex);
    bool any = false;
    for (const ReplicaPtr& r : state_->replicas) any = any || (!r->ejected && !r->draining);
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
  std::string session;
  if (gen && !state_->config.session_header.empty())
    session = std::string(req.header(state_->config.session_header)).substr(0, 256);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->queued;
  }
  auto job = [s = state_, req = std::move(req), out, key, session = std::move(session)] {
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      --s->queued;
    }
    relay(s, req, *out, key, session);
  };
  if (!workers_->pool.try_submit(std::move(job))) {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      --state_->queued;
      ++state_->rejected;
    }
    send_error(*out, 503,
               "the router's queue is full (--max-connections workers busy, --max-queue waiting)",
               "queue_full");
    return;
  }
  if (key) {
    std::lock_guard<std::mutex> lock(state_->mutex);
    ++state_->keyed;
  }
}

std::string Router::metrics_text() const {
  const State& s = *state_;
  const WorkerPool::Stats pool = workers_->pool.stats();
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
  for (const ReplicaPtr& p : s.replicas) {
    const Replica& r = *p;
    const std::string l = "replica=\"" + r.name + "\"";
    line("strata_router_in_flight", l, r.in_flight);
    line("strata_router_routed_total", l, static_cast<double>(r.routed));
    line("strata_router_prefix_hits_total", l, static_cast<double>(r.prefix_hits));
    line("strata_router_failures_total", l, static_cast<double>(r.failures));
    line("strata_router_ejections_total", l, static_cast<double>(r.ejections));
    line("strata_router_replica_up", l, r.ejected ? 0 : 1);
    line("strata_router_replica_draining", l, r.draining ? 1 : 0);
    if (r.scraped) {  // the replica's own gauges, last probe
      line("strata_router_replica_running", l, r.scraped->running);
      line("strata_router_replica_waiting", l, r.scraped->waiting);
      line("strata_router_replica_prefix_cache_query_tokens", l, r.scraped->prefix_query_tokens);
      line("strata_router_replica_prefix_cache_hit_tokens", l, r.scraped->prefix_hit_tokens);
    }
    in_flight += r.in_flight;
    hits += r.prefix_hits;
    healthy += r.ejected || r.draining ? 0 : 1;
  }
  line("strata_router_prefix_hit_share", "", s.keyed ? static_cast<double>(hits) / s.keyed : 0);
  line("strata_router_retries_total", "", static_cast<double>(s.retries));
  line("strata_router_stream_errors_total", "", static_cast<double>(s.stream_errors));
  line("strata_router_unrouted_total", "", static_cast<double>(s.no_replica));
  line("strata_router_sticky_hits_total", "", static_cast<double>(s.sticky_hits));
  line("strata_router_sticky_sessions", "", static_cast<double>(s.sessions.size()));
  line("strata_router_sticky_evictions_total", "", static_cast<double>(s.sessions.evictions()));
  line("strata_router_reloads_total", "", static_cast<double>(s.reloads));
  // The relay pool: requests waiting for a worker, refused with 503 when it was full.
  line("strata_router_queue_length", "", static_cast<double>(s.queued));
  line("strata_router_rejected_total", "", static_cast<double>(s.rejected));
  line("strata_router_workers", "", static_cast<double>(pool.workers));
  line("strata_router_requests_in_flight", "", static_cast<double>(in_flight));
  line("strata_router_healthy_replicas", "", static_cast<double>(healthy));
  // Autoscaling (capacity.h, docs/ROUTER.md).
  line("strata_router_demand", "", s.capacity.demand());
  line("strata_router_replica_capacity", "", s.capacity.per_replica_capacity());
  line("strata_router_recommended_replicas", "", static_cast<double>(s.capacity.recommended()));
  if (s.pd) m += s.pd->metrics_text();  // PD hook
  return m;
}

}  // namespace strata::router
