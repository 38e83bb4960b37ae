// Clients that go away mid-stream, mid-prefill and while queued abort their requests:
// afterwards nothing runs or waits and the KV pool is entirely free. A full queue
// answers 429. These run on a random-weight model with a 4096-token context, where
// long prompts and generations give the test time to act at each stage.
#include <gtest/gtest.h>

#include <random>

#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

std::vector<std::string> slow_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--kv-cache-tokens", "16384", "--prefill-chunk", "8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return serve_args(args);
}

json long_generation() {
  return {
      {"prompt", "Once upon a time"}, {"max_tokens", 3000}, {"ignore_eos", true}, {"stream", true}};
}

// A streamed request whose first event has arrived (it is running).
std::unique_ptr<HttpConnection> start_stream(uint16_t port, const json& body) {
  auto c = std::make_unique<HttpConnection>(port);
  c->send_request("POST", "/v1/completions", body.dump());
  EXPECT_EQ(c->read_head().status, 200);
  EXPECT_TRUE(c->read_event().has_value());
  return c;
}

double metric(uint16_t port, const std::string& name) {
  return metric_value(metrics_text(port), name);
}

void expect_idle_after_aborts(uint16_t port, double aborts) {
  const std::string m = wait_metrics(port, [&](const std::string& t) {
    return engine_idle(t) &&
           metric_value(t, "strata:request_success_total{finish_reason=\"abort\"}") == aborts;
  });
  EXPECT_EQ(metric_value(m, "strata:num_requests_running"), 0);
  EXPECT_EQ(metric_value(m, "strata:num_requests_waiting"), 0);
  EXPECT_EQ(metric_value(m, "strata:kv_cache_usage_ratio"), 0);
  EXPECT_EQ(metric_value(m, "strata:request_success_total{finish_reason=\"abort\"}"), aborts);
}

TEST(Disconnect, MidStreamAbortsAndFreesTheKvCache) {
  ServerProcess server(slow_gguf(), slow_args({}));
  auto c = start_stream(server.port(), long_generation());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->read_event().has_value());
  EXPECT_EQ(metric(server.port(), "strata:num_requests_running"), 1);
  EXPECT_GT(metric(server.port(), "strata:kv_cache_usage_ratio"), 0);
  c->close();
  expect_idle_after_aborts(server.port(), 1);
  EXPECT_LT(metric(server.port(), "strata:generation_tokens_total"), 3000);
  EXPECT_NE(server.log().find(" 499 "), std::string::npos);  // the access log shows the client left
}

TEST(Disconnect, MidPrefillAbortsBeforeAnyToken) {
  ServerProcess server(slow_gguf(), slow_args({}));
  std::mt19937 rng(3);
  std::vector<int> prompt = {1};
  while (prompt.size() < 4000) prompt.push_back(100 + static_cast<int>(rng() % 30000));
  HttpConnection c(server.port());
  c.send_request("POST", "/v1/completions", json{{"prompt", prompt}, {"max_tokens", 10}}.dump());
  // Prefilling: admitted, some prompt computed, no token yet.
  const std::string m = wait_metrics(server.port(), [](const std::string& t) {
    return metric_value(t, "strata:num_requests_running") == 1 &&
           metric_value(t, "strata:prompt_tokens_total") >= 64;
  });
  ASSERT_EQ(metric_value(m, "strata:num_requests_running"), 1);
  ASSERT_EQ(metric_value(m, "strata:generation_tokens_total"), 0);
  c.close();
  expect_idle_after_aborts(server.port(), 1);
  EXPECT_EQ(metric(server.port(), "strata:generation_tokens_total"), 0);
  EXPECT_LT(metric(server.port(), "strata:prompt_tokens_total"), 4000);
}

TEST(Disconnect, WhileQueuedLeavesTheQueue) {
  ServerProcess server(slow_gguf(), slow_args({"--max-seqs", "1"}));
  const uint16_t port = server.port();
  auto running = start_stream(port, long_generation());
  HttpConnection queued(port);
  json body = long_generation();
  body["prompt"] = "A different prompt";
  queued.send_request("POST", "/v1/completions", body.dump());
  std::string m = wait_metrics(port, [](const std::string& t) {
    return metric_value(t, "strata:num_requests_waiting") == 1;
  });
  ASSERT_EQ(metric_value(m, "strata:num_requests_waiting"), 1);
  queued.close();
  m = wait_metrics(port, [](const std::string& t) {
    return metric_value(t, "strata:num_requests_waiting") == 0;
  });
  EXPECT_EQ(metric_value(m, "strata:num_requests_waiting"), 0);
  EXPECT_EQ(metric_value(m, "strata:num_requests_running"), 1);  // the other one carries on
  EXPECT_TRUE(running->read_event().has_value());
  running->close();
  expect_idle_after_aborts(port, 2);
}

TEST(Disconnect, FullQueueAnswers429) {
  ServerProcess server(slow_gguf(), slow_args({"--max-seqs", "1", "--max-queued-requests", "1"}));
  const uint16_t port = server.port();
  auto running = start_stream(port, long_generation());
  HttpConnection queued(port);
  queued.send_request("POST", "/v1/completions", long_generation().dump());
  wait_metrics(port, [](const std::string& t) {
    return metric_value(t, "strata:num_requests_waiting") == 1;
  });
  const auto refused = http_post(port, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}});
  EXPECT_EQ(refused.status, 429);
  EXPECT_EQ(refused.json()["error"]["code"], "queue_full");
  // n counts: two choices never fit a queue of one.
  running->close();
  queued.close();
  expect_idle_after_aborts(port, 2);
  EXPECT_EQ(
      http_post(port, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}, {"n", 3}}).status,
      429);
  EXPECT_EQ(http_post(port, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
  EXPECT_EQ(metric(port, "strata:request_errors_total{code=\"429\"}"), 2);
}

}  // namespace
}  // namespace strata::testing
