// The router end to end on loopback: two real `strata serve` replicas of a random tiny
// model (build/strata, tests/http/server_process.h) behind an in-process Router. Sticky
// sessions pin, a full relay pool answers 503 in the OpenAI error shape, and when one
// replica is killed with SIGKILL mid-run: its streams end with an SSE error event and
// [DONE], requests that had no byte yet complete on the other replica through retries,
// and the dead replica is ejected. Every read has a timeout, so nothing can hang.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "http/http_test_util.h"
#include "router/router.h"
#include "server/http_server.h"

namespace strata::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// Two replicas, started side by side (the model is built once per build tree).
struct Replicas {
  std::unique_ptr<ServerProcess> a, b;
  Replicas() {
    const std::vector<std::string> args = serve_args({"--kv-cache-tokens", "16384"});
    a = std::make_unique<ServerProcess>(slow_gguf(), args, false);
    b = std::make_unique<ServerProcess>(slow_gguf(), args, false);
    a->wait_healthy(30);
    b->wait_healthy(30);
  }
  std::string url(const ServerProcess& s) const {
    return "http://127.0.0.1:" + std::to_string(s.port());
  }
};

// A Router behind the server's own HTTP transport on a free port.
struct Front {
  std::unique_ptr<router::Router> router;
  std::unique_ptr<server::HttpServer> http;
  explicit Front(router::RouterConfig c) {
    router = std::make_unique<router::Router>(std::move(c));
    server::HttpServerConfig hc;
    hc.port = 0;
    http = std::make_unique<server::HttpServer>(
        hc, [r = router.get()](server::HttpRequest q, std::shared_ptr<server::Responder> o) {
          r->handle(std::move(q), std::move(o));
        });
    http->start();
  }
  ~Front() {
    http->stop_accepting();
    router.reset();  // waits for the relays (the replicas are gone or finished)
    http->stop();
  }
  uint16_t port() const { return http->port(); }
  double metric(const std::string& name) const {
    return metric_value(router->metrics_text(), name);
  }
};

json short_request(int max_tokens = 4) {
  return {{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"temperature", 0}};
}

// Long enough to be running when the replica dies (the plain requests too: 250 tokens),
// short enough that the survivors end within seconds.
constexpr int kStreamTokens = 500;

json long_stream() {
  return {{"prompt", "Once upon a time"},
          {"max_tokens", kStreamTokens},
          {"ignore_eos", true},
          {"stream", true}};
}

TEST(RouterLoopback, StickySessionsPinAndAFullPoolAnswers503) {
  Replicas reps;
  router::RouterConfig c;
  c.replicas = {reps.url(*reps.a), reps.url(*reps.b)};
  c.policy = router::PolicyKind::kRoundRobin;
  Front front(c);
  // Round-robin alone alternates; the session header keeps all four on one replica.
  for (int i = 0; i < 4; ++i) {
    const auto r =
        http_post(front.port(), "/v1/completions", short_request(), {"X-Session-Id: chat-1"});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  EXPECT_EQ(front.metric("strata_router_sticky_hits_total"), 3);
  EXPECT_EQ(front.metric("strata_router_sticky_sessions"), 1);
  const std::string m = front.router->metrics_text();
  const double on_a =
      metric_value(m, "strata_router_routed_total{replica=\"" + reps.url(*reps.a) + "\"}");
  EXPECT_TRUE(on_a == 0 || on_a == 4) << m;

  // One worker, no queue: while a stream holds the worker, the next request is refused.
  c.max_connections = 1;
  c.max_queue = 0;
  Front small(c);
  HttpConnection stream(small.port(), 10);
  stream.send_request("POST", "/v1/completions", long_stream().dump());
  ASSERT_EQ(stream.read_head().status, 200);
  ASSERT_TRUE(stream.read_event());
  const auto refused = http_post(small.port(), "/v1/completions", short_request());
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.json()["error"]["code"], "queue_full") << refused.body;
  EXPECT_EQ(small.metric("strata_router_rejected_total"), 1);
  stream.close();
  reps.a->signal(SIGKILL);  // ends the stream's relay at once
  reps.b->signal(SIGKILL);
}

TEST(RouterLoopback, KilledReplicaIsEjectedStreamsEndAndNewRequestsRetry) {
  Replicas reps;
  const std::string dead = reps.url(*reps.a);
  router::RouterConfig c;
  c.replicas = {dead, reps.url(*reps.b)};
  c.policy = router::PolicyKind::kLeastLoad;
  c.eject_after = 6;  // the broken streams and a probe or two do not eject before phase 2
  c.probe_interval_s = 0.5;
  c.cooldown_s = 60;
  c.timeouts = {1, 10, 5};
  Front front(c);

  // Four long streams: least-load puts two on each replica.
  std::vector<std::unique_ptr<HttpConnection>> streams;
  for (int i = 0; i < 4; ++i) {
    auto s = std::make_unique<HttpConnection>(front.port(), 10);
    s->send_request("POST", "/v1/completions", long_stream().dump());
    ASSERT_EQ(s->read_head().status, 200);
    ASSERT_TRUE(s->read_event());
    streams.push_back(std::move(s));
  }
  // Four plain requests join them (two on each): no byte of theirs is sent before the
  // whole answer is ready, so the two on the dead replica must be retried.
  std::vector<std::future<HttpResult>> results;
  auto post = [&](int max_tokens) {
    results.push_back(std::async(std::launch::async, [&front, max_tokens] {
      return http_post(front.port(), "/v1/completions", short_request(max_tokens));
    }));
  };
  for (int i = 0; i < 4; ++i) post(250);
  const std::string in_flight_dead = "strata_router_in_flight{replica=\"" + dead + "\"}";
  for (int i = 0; i < 500 && front.metric("strata_router_requests_in_flight") < 8; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(front.metric(in_flight_dead), 4);
  reps.a->signal(SIGKILL);
  // And two sent after the kill, before the router knows: least-load may try the dead
  // replica first (refused), and the retry completes on the live one.
  for (int i = 0; i < 2; ++i) post(8);

  // Streams on the dead replica end with an error event then [DONE]; the others run to
  // their length.
  // Each stream's ending, for the failure message (a load-dependent failure once counted
  // three broken streams while the router counted two stream errors).
  int broken = 0, finished = 0;
  std::string endings;
  for (size_t i = 0; i < streams.size(); ++i) {
    bool error = false, done = false;
    std::string last;
    while (const auto ev = streams[i]->read_event()) {
      if (*ev == "[DONE]") {
        done = true;
        break;
      }
      last = *ev;
      if (ev->find("\"error\"") != std::string::npos) error = true;
    }
    EXPECT_TRUE(done);
    endings += "stream " + std::to_string(i) + (done ? "" : " (no [DONE])") + ": " +
               last.substr(0, 400) + "\n";
    if (error) {
      ++broken;
    } else if (json::parse(last)["choices"][0]["finish_reason"] == "length") {
      ++finished;
    }
  }
  std::string live_log = reps.b->log();
  if (live_log.size() > 4000) live_log.erase(0, live_log.size() - 4000);
  const std::string report = endings + "live replica's log (end):\n" + live_log;
  EXPECT_EQ(broken, 2) << report;
  EXPECT_EQ(finished, 2) << report;

  for (auto& f : results) {
    ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
    const HttpResult r = f.get();
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status == 200) {
      EXPECT_FALSE(r.json()["choices"][0]["text"].get<std::string>().empty());
    }
  }
  EXPECT_GE(front.metric("strata_router_retries_total"), 2);
  EXPECT_EQ(front.metric("strata_router_stream_errors_total"), 2);

  // Ejected within a few seconds (failed connects and probes).
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  const std::string up = "strata_router_replica_up{replica=\"" + dead + "\"}";
  while (front.metric(up) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(50ms);
  EXPECT_EQ(front.metric(up), 0);
  EXPECT_EQ(front.metric("strata_router_healthy_replicas"), 1);
  streams.clear();
  reps.b->signal(SIGKILL);  // ends the two remaining relays at once
}

}  // namespace
}  // namespace strata::testing
