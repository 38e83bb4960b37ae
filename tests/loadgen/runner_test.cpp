// The event loop and runner against a scripted raw-socket server: a stream broken
// mid-way, an HTTP error and a refused connection are failed requests with their
// reason; --max-concurrency bounds the requests in flight; chunks are timed as they
// arrive.
#include "loadgen/runner.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::loadgen {
namespace {

struct Step {
  int delay_ms;
  std::string bytes;
};

// Accepts connections on a loopback port; each is served on its own thread: the
// request is read, then `script` steps are written with their delays, then it closes.
class FakeServer {
 public:
  explicit FakeServer(std::function<std::vector<Step>()> script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 64);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] {
      for (;;) {
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::lock_guard lock(mu_);
        workers_.emplace_back([this, c] { serve(c); });
      }
    });
  }
  ~FakeServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    acceptor_.join();
    std::lock_guard lock(mu_);
    for (auto& t : workers_) t.join();
  }

  Url url() const { return {"127.0.0.1", std::to_string(port_), ""}; }
  int max_in_flight() const { return max_in_flight_; }

 private:
  void serve(int c) {
    const int now = ++in_flight_;
    for (int m = max_in_flight_; now > m && !max_in_flight_.compare_exchange_weak(m, now);) {
    }
    std::string in;
    char buf[4096];
    for (;;) {  // headers, then Content-Length bytes of body
      const size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos) {
        const size_t cl = in.find("Content-Length: ");
        const size_t body = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
        if (in.size() >= end + 4 + body) break;
      }
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      in.append(buf, static_cast<size_t>(n));
    }
    const auto steps = script_();
    for (size_t i = 0; i < steps.size(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(steps[i].delay_ms));
      // Leaves the count before the client can see the end of its response, so the
      // count never exceeds the client's requests in flight.
      if (i + 1 == steps.size()) --in_flight_;
      ::send(c, steps[i].bytes.data(), steps[i].bytes.size(), MSG_NOSIGNAL);
    }
    if (steps.empty()) --in_flight_;
    ::close(c);
  }

  std::function<std::vector<Step>()> script_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
};

std::string http_chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx", data.size());
  return std::string(size) + "\r\n" + data + "\r\n";
}

std::string text_event(const std::string& text) {
  return "data: {\"choices\": [{\"index\": 0, \"text\": \"" + text + "\"}]}\n\n";
}

const std::string kStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

RunOptions options(const Url& url) {
  RunOptions o;
  o.url = url;
  o.request_rate = std::numeric_limits<double>::infinity();
  o.timeout_s = 10;
  return o;
}

std::vector<RequestSpec> specs(int n) {
  return std::vector<RequestSpec>(n, {"{}", 3});
}

TEST(Runner, TimesChunksAsTheyArrive) {
  FakeServer server([] {
    return std::vector<Step>{{0, kStreamHead},
                             {50, http_chunk(text_event("a"))},
                             {100, http_chunk(text_event("b"))},
                             {100, http_chunk(text_event("c") + "data: [DONE]\n\n")},
                             {0, "0\r\n\r\n"}};
  });
  const auto r = run_benchmark(options(server.url()), specs(2));
  ASSERT_EQ(r.records.size(), 2u);
  for (const auto& rec : r.records) {
    ASSERT_TRUE(rec.ok()) << rec.error;
    EXPECT_EQ(rec.output_tokens, 3);
    EXPECT_EQ(rec.prompt_tokens, 3);
    EXPECT_GE(rec.ttft_s, 0.045);
    ASSERT_EQ(rec.itl_s.size(), 2u);
    EXPECT_GE(rec.itl_s[0] + rec.itl_s[1], 0.15);  // two 100 ms pauses (less any read delay)
    EXPECT_LT(rec.itl_s[0], 2.0);
    EXPECT_GE(rec.e2el_s, 0.24);
  }
  EXPECT_GE(r.duration_s, 0.24);
}

TEST(Runner, BrokenStreamHttpErrorAndRefusedAreFailures) {
  {
    FakeServer server([] {
      return std::vector<Step>{{0, kStreamHead}, {0, http_chunk(text_event("a"))}};  // then closes
    });
    const auto r = run_benchmark(options(server.url()), specs(1));
    ASSERT_FALSE(r.records[0].ok());
    EXPECT_EQ(r.records[0].error.rfind("the stream broke: ", 0), 0u) << r.records[0].error;
    EXPECT_GE(r.records[0].ttft_s, 0);
  }
  {
    FakeServer server([] {
      const std::string body = "{\"error\": {\"message\": \"boom\"}}";
      return std::vector<Step>{{0, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: " +
                                       std::to_string(body.size()) + "\r\n\r\n" + body}};
    });
    const auto r = run_benchmark(options(server.url()), specs(3));
    for (const auto& rec : r.records) EXPECT_EQ(rec.error, "HTTP 500: boom");
  }
  {
    Url closed;
    {
      FakeServer server([] { return std::vector<Step>{}; });
      closed = server.url();
    }
    const auto r = run_benchmark(options(closed), specs(1));
    EXPECT_EQ(r.records[0].error.rfind("no response: ", 0), 0u) << r.records[0].error;
  }
}

TEST(Runner, MaxConcurrencyBoundsRequestsInFlight) {
  FakeServer server([] {
    return std::vector<Step>{
        {0, kStreamHead}, {80, http_chunk(text_event("a") + "data: [DONE]\n\n")}, {0, "0\r\n\r\n"}};
  });
  RunOptions o = options(server.url());
  o.max_concurrency = 2;
  const auto r = run_benchmark(o, specs(6));
  for (const auto& rec : r.records) EXPECT_TRUE(rec.ok()) << rec.error;
  EXPECT_EQ(server.max_in_flight(), 2);
  EXPECT_GE(r.duration_s, 0.24);  // three waves of 80 ms
}

TEST(Runner, RequestRateSpacesArrivals) {
  FakeServer server([] {
    return std::vector<Step>{
        {0, kStreamHead}, {0, http_chunk(text_event("a") + "data: [DONE]\n\n")}, {0, "0\r\n\r\n"}};
  });
  RunOptions o = options(server.url());
  o.request_rate = 20;  // 19 gaps of 50 ms on average
  o.burstiness = 1000;  // nearly constant gaps
  const auto r = run_benchmark(o, specs(20));
  double last = 0;
  for (const auto& rec : r.records) {
    EXPECT_TRUE(rec.ok()) << rec.error;
    EXPECT_GE(rec.start_s, last);
    last = rec.start_s;
  }
  EXPECT_NEAR(r.records.back().start_s, 0.95, 0.15);
}

}  // namespace
}  // namespace strata::loadgen
