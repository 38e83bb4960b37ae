#include "router/pd_route.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/error.h"

namespace strata::router {
namespace {

// One exchange with a whole (small) JSON answer.
std::pair<int, std::string> exchange(const loadgen::Url& url, const std::string& method,
                                     const std::string& path, const std::string& body,
                                     const UpstreamTimeouts& timeouts) {
  int status = 0;
  std::string answer;
  const UpstreamResult r = upstream_exchange(
      url.host, url.port, method, url.base_path + path, body, timeouts,
      [&](const UpstreamHead& h) {
        status = h.status;
        return true;
      },
      [&](std::string_view bytes) {
        if (answer.size() < (1u << 20)) answer.append(bytes);
      });
  if (r.failure != UpstreamFailure::kNone) throw Error(url.host + ":" + url.port + ": " + r.error);
  return {status, answer};
}

}  // namespace

PdRoute::PdRoute(PdRouteConfig config) : config_(std::move(config)) {
  for (const std::string& r : config_.prefill_replicas)
    prefill_.push_back(loadgen::parse_base_url(r));
}

std::string PdRoute::kv_target(const loadgen::Url& decode) {
  const std::string key = decode.host + ":" + decode.port;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = info_.find(key);
    if (it != info_.end() && steady_now_s() - it->second.fetched_s < config_.info_ttl_s)
      return it->second.kv_listen;
  }
  UpstreamTimeouts t = config_.timeouts;
  t.first_byte_s = std::min(t.first_byte_s, 5.0);
  const auto [status, body] = exchange(decode, "GET", "/internal/kv/info", "", t);
  std::string listen;
  if (status == 200) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    if (j.is_object() && j.contains("kv_listen") && j["kv_listen"].is_string())
      listen = j["kv_listen"].get<std::string>();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  info_[key] = {listen, steady_now_s()};
  return listen;
}

PdRoute::Outcome PdRoute::before_decode(const std::string& body, const loadgen::Url& decode) {
  Outcome out;
  try {
    if (prefill_.empty()) throw Error("no prefill replica");
    const std::string target = kv_target(decode);
    if (target.empty()) throw Error("the decode replica has no KV receiver");
    auto j = nlohmann::json::parse(body);
    if (!j.is_object()) throw Error("the body is not a JSON object");
    j["kv_target"] = target;
    // What the decode replica holds already (its prefix cache), so that only the blocks
    // it lacks count as recompute time saved; without an answer, it is assumed to lack all.
    try {
      UpstreamTimeouts t = config_.timeouts;
      t.first_byte_s = std::min(t.first_byte_s, 5.0);
      const auto [status, held] = exchange(decode, "POST", "/internal/kv/lookup", body, t);
      const auto h = nlohmann::json::parse(held, nullptr, false);
      if (status == 200 && h.is_object() && h.contains("held_blocks"))
        j["route"] = {{"decode_held_blocks", h["held_blocks"]}};
    } catch (const std::exception&) {
    }
    loadgen::Url prefill;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      prefill = prefill_[next_++ % prefill_.size()];
    }
    const auto [status, answer] =
        exchange(prefill, "POST", "/internal/kv/prefill", j.dump(), config_.timeouts);
    if (status != 200) throw Error("the prefill replica answered " + std::to_string(status));
    const auto a = nlohmann::json::parse(answer, nullptr, false);
    out.decision = a.is_object() ? a.value("decision", std::string("recompute")) : "recompute";
    if (a.is_object() && out.decision != "transfer") out.error = a.value("reason", std::string());
  } catch (const std::exception& e) {
    out.decision = "skipped";
    out.error = e.what();
    std::fprintf(stderr, "strata router: no KV prefill (the decode replica recomputes): %s\n",
                 e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++(out.decision == "transfer"    ? transfers_
     : out.decision == "recompute" ? recomputes_
                                   : skipped_);
  return out;
}

std::string PdRoute::metrics_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return "# TYPE strata_router_pd_prefills_total counter\n"
         "strata_router_pd_prefills_total{decision=\"transfer\"} " +
         std::to_string(transfers_) + "\nstrata_router_pd_prefills_total{decision=\"recompute\"} " +
         std::to_string(recomputes_) + "\nstrata_router_pd_prefills_total{decision=\"skipped\"} " +
         std::to_string(skipped_) + "\n";
}

}  // namespace strata::router
