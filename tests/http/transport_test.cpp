// The HTTP transport alone (no model): an in-process HttpServer with a test handler.
// Streams, disconnect notification, body limits, 100-continue, pipelining, and the
// busy count returning to zero.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <thread>

#include "http/http_client.h"
#include "server/http_server.h"

namespace strata::server {
namespace {

using strata::testing::HttpConnection;

class Transport : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerConfig config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.max_body_bytes = 1024;
    config.idle_timeout_s = 5;
    server_ =
        std::make_unique<HttpServer>(config, [this](HttpRequest req, std::shared_ptr<Responder> r) {
          handle(std::move(req), std::move(r));
        });
    server_->start();
  }
  void TearDown() override { server_->stop(); }

  void handle(HttpRequest req, std::shared_ptr<Responder> r) {
    if (req.rejected)
      return r->send({req.rejected, "application/json", "{\"rejected\": true}", {}});
    if (req.path() == "/stream") {
      r->start_stream(200, "text/event-stream");
      r->write("data: first\n\n");
      r->on_disconnect([this] { disconnected_.set_value(); });
      std::lock_guard<std::mutex> lock(mutex_);
      held_ = std::move(r);
      return;
    }
    r->send({200, "text/plain", req.method + " " + req.target + " " + req.body, {}});
  }

  bool wait_not_busy() {
    for (int i = 0; i < 200 && server_->busy() > 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return server_->busy() == 0;
  }

  std::unique_ptr<HttpServer> server_;
  std::mutex mutex_;
  std::shared_ptr<Responder> held_;
  std::promise<void> disconnected_;
};

TEST_F(Transport, StreamsFromAnyThreadAndReportsADisconnect) {
  HttpConnection c(server_->port());
  c.send_request("GET", "/stream");
  EXPECT_EQ(c.read_head().headers.at("transfer-encoding"), "chunked");
  EXPECT_EQ(*c.read_event(), "first");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_->write("data: second\n\n");  // from the test thread: posted to the strand
  }
  EXPECT_EQ(*c.read_event(), "second");
  EXPECT_EQ(server_->busy(), 1u);
  c.close();
  EXPECT_EQ(disconnected_.get_future().wait_for(std::chrono::seconds(5)),
            std::future_status::ready);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_->write("data: into the void\n\n");  // ignored
    held_->finish();
    held_.reset();
  }
  EXPECT_TRUE(wait_not_busy());
}

TEST_F(Transport, AFinishedStreamLeavesTheConnectionReusable) {
  HttpConnection c(server_->port());
  c.send_request("GET", "/stream");
  c.read_head();
  c.read_event();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    held_->finish();
    held_.reset();
  }
  EXPECT_FALSE(c.read_event().has_value());
  c.send_request("POST", "/echo", "hello");
  EXPECT_EQ(c.read_response().body, "POST /echo hello");
  EXPECT_TRUE(wait_not_busy());
}

TEST_F(Transport, PipelinedRequestsAreAnsweredInOrder) {
  HttpConnection c(server_->port());
  c.send_raw(
      "GET /a HTTP/1.1\r\nHost: x\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: "
      "2\r\n\r\nhiGET /c HTTP/1.1\r\n\r\n");
  EXPECT_EQ(c.read_response().body, "GET /a ");
  EXPECT_EQ(c.read_response().body, "POST /b hi");
  EXPECT_EQ(c.read_response().body, "GET /c ");
}

TEST_F(Transport, BodiesOverTheLimitAre413AndTheConnectionCloses) {
  HttpConnection c(server_->port());
  c.send_raw("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" +
             std::string(5000, 'z'));
  const auto r = c.read_response();
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.headers.at("connection"), "close");
  EXPECT_TRUE(c.server_closed(3000));
  // Within the limit, with Expect: 100-continue (as curl sends for large bodies).
  HttpConnection d(server_->port());
  d.send_raw("POST /y HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(d.read_head(/*skip_interim=*/false).status, 100);
  d.send_raw("abc");
  EXPECT_EQ(d.read_response().body, "POST /y abc");
  EXPECT_TRUE(wait_not_busy());
}

TEST_F(Transport, MalformedRequestsAre400) {
  HttpConnection c(server_->port());
  c.send_raw("NOT HTTP AT ALL\r\n\r\n");
  EXPECT_EQ(c.read_response().status, 400);
  EXPECT_TRUE(wait_not_busy());
}

}  // namespace
}  // namespace strata::server
