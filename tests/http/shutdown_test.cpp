// Graceful shutdown: SIGTERM stops new connections, lets a running stream finish
// within --shutdown-timeout, and exits 0; past the timeout the rest is aborted and the
// process still exits 0.
#include <gtest/gtest.h>

#include <chrono>

#include "http/http_test_util.h"

namespace strata::testing {
namespace {

using nlohmann::json;

std::vector<std::string> slow_args(const std::string& timeout) {
  return serve_args({"--kv-cache-tokens", "16384", "--shutdown-timeout", timeout});
}

bool can_connect(uint16_t port) {
  try {
    HttpConnection c(port, 1);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

TEST(Shutdown, SigtermLetsTheStreamFinishAndExitsZero) {
  ServerProcess server(slow_gguf(), slow_args("60"));
  const uint16_t port = server.port();
  HttpConnection c(port);
  c.send_request("POST", "/v1/completions",
                 json{{"prompt", "Once upon a time"},
                      {"max_tokens", 300},
                      {"ignore_eos", true},
                      {"stream", true}}
                     .dump());
  ASSERT_EQ(c.read_head().status, 200);
  ASSERT_TRUE(c.read_event().has_value());
  server.signal(SIGTERM);
  std::string last;
  int events = 1;
  bool done = false;
  while (auto ev = c.read_event()) {
    if (*ev == "[DONE]") {
      done = true;
    } else {
      last = *ev;
      ++events;
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(json::parse(last)["choices"][0]["finish_reason"], "length");
  const auto code = server.wait_exit(10);
  ASSERT_TRUE(code.has_value()) << server.log();
  EXPECT_EQ(*code, 0) << server.log();
  EXPECT_FALSE(can_connect(port));
}

TEST(Shutdown, PastTheTimeoutRequestsAreAbortedAndTheExitIsStillZero) {
  ServerProcess server(slow_gguf(), slow_args("0.3"));
  const uint16_t port = server.port();
  HttpConnection c(port);
  c.send_request("POST", "/v1/completions",
                 json{{"prompt", "Once upon a time"},
                      {"max_tokens", 3000},
                      {"ignore_eos", true},
                      {"stream", true}}
                     .dump());
  ASSERT_EQ(c.read_head().status, 200);
  ASSERT_TRUE(c.read_event().has_value());
  const auto t0 = std::chrono::steady_clock::now();
  server.signal(SIGTERM);
  bool done = false, error_event = false;
  while (auto ev = c.read_event()) {
    done = done || *ev == "[DONE]";
    error_event = error_event || ev->find("\"error\"") != std::string::npos;
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(error_event);
  const auto code = server.wait_exit(10);
  ASSERT_TRUE(code.has_value()) << server.log();
  EXPECT_EQ(*code, 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_NE(server.log().find("aborting them"), std::string::npos);
}

TEST(Shutdown, SigintOnAnIdleServerExitsZero) {
  ServerProcess server(aidreams_gguf(), serve_args());
  server.signal(SIGINT);
  const auto code = server.wait_exit(10);
  ASSERT_TRUE(code.has_value()) << server.log();
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace strata::testing
