// Boost.Beast sessions and listener. Each connection runs on its own strand; a session
// reads one request at a time, hands it to the handler, and while the response is in
// progress keeps one read outstanding on the socket, so that a client that closes the
// connection (mid-stream, mid-prefill or while queued) is noticed at once.
#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <deque>
#include <optional>
#include <sstream>
#include <thread>

#include "core/clock.h"
#include "core/error.h"

namespace strata::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

constexpr size_t kMaxPipelinedBytes = 64 << 10;  // read ahead while a response is in progress
constexpr size_t kMaxQueuedOutput = 64 << 20;    // a client this far behind counts as gone
constexpr size_t kMaxLingerBytes = 64 << 20;     // discarded after a refused request
constexpr auto kLingerTimeout = std::chrono::seconds(2);

std::string lower(beast::string_view s) {
  std::string out(s.data(), s.size());
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct Shared {
  HttpServerConfig config;
  HttpHandler handler;
  std::atomic<size_t> busy{0};
  std::atomic<uint64_t> exchanges{0};
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) {}
  ~Session() {
    if (in_exchange_) --shared_.busy;
  }

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

  // Responder entry points; each runs on the strand. `exchange` guards against a
  // responder outliving its exchange on a keep-alive connection.
  template <class Fn>
  void on_strand(uint64_t exchange, Fn fn) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), exchange,
                                           fn = std::move(fn)]() mutable {
      if (self->in_exchange_ && self->exchange_ == exchange && !self->response_queued_) fn(*self);
    });
  }
  void post(std::function<void()> fn) { net::post(stream_.get_executor(), std::move(fn)); }

  void send(HttpResponse r) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
    res.set(http::field::server, "strata");
    res.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive_);
    res.body() = std::move(r.body);
    res.prepare_payload();
    std::ostringstream os;
    os << res;
    enqueue(os.str());
    end_exchange();
  }

  void start_stream(int status, const std::string& content_type) {
    if (streaming_) return;
    streaming_ = true;
    sse_ = content_type.starts_with("text/event-stream");
    http::response<http::empty_body> res{static_cast<http::status>(status), 11};
    res.set(http::field::server, "strata");
    res.set(http::field::content_type, content_type);
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(keep_alive_);
    res.chunked(true);
    std::ostringstream os;
    os << res.base();
    enqueue(os.str());
  }

  void write_chunk(const std::string& data) {
    if (!streaming_ || data.empty()) return;  // an empty chunk would end the body
    char size[32];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk;
    chunk.reserve(static_cast<size_t>(n) + data.size() + 2);
    chunk.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
    enqueue(std::move(chunk));
  }

  void finish_stream() {
    if (streaming_) enqueue("0\r\n\r\n");
    end_exchange();
  }

  void set_on_disconnect(std::function<void()> fn) {
    if (gone_) {
      post(std::move(fn));
    } else {
      on_disconnect_ = std::move(fn);
    }
  }

 private:
  // ---- reading requests ----
  void read_header() {
    parser_.emplace();
    parser_->header_limit(shared_.config.max_header_bytes);
    parser_->body_limit(shared_.config.max_body_bytes);
    stream_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(shared_.config.idle_timeout_s)));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(error_code ec) {
    if (ec == http::error::body_limit) return reject(413);  // Content-Length over the limit
    if (ec) {
      if (is_parse_error(ec)) return reject(400);
      return close();  // end of stream, timeout or reset
    }
    const auto& req = parser_->get();
    if (const auto len = parser_->content_length(); len && *len > shared_.config.max_body_bytes) {
      return reject(413);
    }
    if (beast::iequals(req[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(stream_, net::buffer(*cont),
                       [self = shared_from_this(), cont](error_code wec, size_t) {
                         if (wec) return self->close();
                         self->read_body();
                       });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) {
                       if (ec == http::error::body_limit) return self->reject(413);
                       if (ec) {
                         if (self->is_parse_error(ec)) return self->reject(400);
                         return self->close();
                       }
                       self->dispatch_request(0);
                     });
  }

  // Malformed HTTP (as opposed to a connection that ended or timed out).
  static bool is_parse_error(error_code ec) {
    return ec.category() == make_error_code(http::error::end_of_stream).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
  }

  // The transport refuses the request; the handler still answers it (see `rejected`).
  void reject(int status) {
    keep_alive_ = false;
    dispatch_request(status);
  }

  void dispatch_request(int rejected) {
    HttpRequest req;
    req.received_s = steady_now_s();
    req.rejected = rejected;
    if (parser_ && parser_->is_header_done()) {
      auto& msg = parser_->get();
      req.method = std::string(msg.method_string());
      req.target = std::string(msg.target());
      for (const auto& f : msg)
        req.headers.emplace_back(lower(f.name_string()), std::string(f.value()));
      if (!rejected) {
        req.body = std::move(msg.body());
        keep_alive_ = msg.keep_alive();
      }
      http11_ = msg.version() >= 11;
    }
    error_code ec;
    const auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) req.remote = ep.address().to_string() + ":" + std::to_string(ep.port());

    ++exchange_;
    ++shared_.exchanges;
    in_exchange_ = true;
    response_queued_ = streaming_ = false;
    ++shared_.busy;
    stream_.expires_never();
    if (!rejected) watch();
    auto responder = make_responder();
    try {
      shared_.handler(std::move(req), responder);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "strata serve: handler failed: %s\n", e.what());
      if (in_exchange_ && !response_queued_) {
        send(
            {500,
             "application/json",
             R"({"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}})",
             {}});
      }
    }
  }

  std::shared_ptr<Responder> make_responder();

  // While a response is in progress, one read stays outstanding: it collects pipelined
  // bytes for the next request and, above all, reports a client that has gone away.
  void watch() {
    if (watching_ || gone_ || buffer_.size() >= kMaxPipelinedBytes) return;
    watching_ = true;
    stream_.async_read_some(
        buffer_.prepare(4096),
        [self = shared_from_this()](error_code ec, size_t n) { self->on_watch(ec, n); });
  }

  void on_watch(error_code ec, size_t n) {
    watching_ = false;
    if (ec == net::error::operation_aborted && !gone_) return resume();
    if (ec == net::error::eof && in_exchange_) return half_closed();
    if (ec) return client_gone();
    buffer_.commit(n);
    if (in_exchange_) {
      watch();
    } else {
      resume();
    }
  }

  // The client shut down its sending side: legal in HTTP/1.1 (`nc -N`, some proxies)
  // once the request is sent, and also what a client that closed the whole connection
  // looks like. Only a write can tell them apart: a closed socket answers a write with a
  // reset, and the write after that fails. So the exchange goes on, and until its
  // response starts, probes are written, each harmless to a client that is still
  // reading: an interim `102 Processing` response (RFC 9110 requires HTTP/1.1 clients to
  // accept unexpected 1xx responses) before the head, an SSE comment in an event stream.
  void half_closed() {
    read_closed_ = true;
    keep_alive_ = false;  // no further request can come
    probe();
  }

  void probe() {
    if (gone_ || !in_exchange_ || response_queued_) return;
    if (!streaming_) {
      if (!http11_) return;  // HTTP/1.0 clients get no 1xx: the request just runs
      enqueue("HTTP/1.1 102 Processing\r\n\r\n");
    } else if (sse_) {
      write_chunk(": ping\n\n");
    } else {
      return;  // a stream of another type has no harmless filler
    }
    // The second probe finds the reset the first one drew; later ones every second.
    probe_timer_.expires_after(n_probes_++ == 0 ? std::chrono::milliseconds(50)
                                                : std::chrono::milliseconds(1000));
    probe_timer_.async_wait([self = shared_from_this()](error_code ec) {
      if (!ec) self->probe();
    });
  }

  void client_gone() {
    if (gone_) return;
    gone_ = true;
    // A write in flight still points into out_.front(); its handler drops the queue.
    if (!writing_) drop_output();
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
    if (auto fn = std::move(on_disconnect_)) {
      on_disconnect_ = nullptr;
      fn();
    }
    if (response_queued_) exchange_written();
  }

  // ---- writing responses ----
  void enqueue(std::string bytes) {
    if (gone_) return;
    out_bytes_ += bytes.size();
    out_.push_back(std::move(bytes));
    if (out_bytes_ > kMaxQueuedOutput) return client_gone();
    if (!writing_) write_next();
  }

  void write_next() {
    if (out_.empty()) {
      writing_ = false;
      if (response_queued_) exchange_written();
      return;
    }
    writing_ = true;
    net::async_write(stream_, net::buffer(out_.front()),
                     [self = shared_from_this()](error_code ec, size_t n) {
                       self->writing_ = false;
                       if (ec || self->gone_) {
                         self->drop_output();
                         self->client_gone();
                         if (self->response_queued_) self->exchange_written();
                         return;
                       }
                       self->out_bytes_ -= n;
                       self->out_.pop_front();
                       self->write_next();
                     });
  }

  void drop_output() {
    out_.clear();
    out_bytes_ = 0;
  }

  // The handler has queued the whole response.
  void end_exchange() {
    response_queued_ = true;
    on_disconnect_ = nullptr;
    if (gone_ || !writing_) exchange_written();
  }

  // The response is on the wire (or the client is gone): next request, or close.
  void exchange_written() {
    if (!in_exchange_) return;
    in_exchange_ = false;
    --shared_.busy;
    probe_timer_.cancel();
    n_probes_ = 0;
    if (gone_) return;
    if (read_closed_) return close_after_half_close();
    after_watch_ = keep_alive_ ? AfterWatch::kNextRequest : AfterWatch::kLinger;
    if (watching_) {
      // The outstanding watch read must finish before the socket is read again.
      error_code ignored;
      stream_.socket().cancel(ignored);
      return;
    }
    resume();
  }

  void resume() {
    const AfterWatch next = after_watch_;
    after_watch_ = AfterWatch::kNothing;
    if (next == AfterWatch::kNextRequest) read_header();
    if (next == AfterWatch::kLinger) linger_close();
  }

  // The client sends nothing more: end our side too once the response is out.
  void close_after_half_close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (watching_) {
      stream_.socket().cancel(ignored);
      return;
    }
    close();
  }

  void close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  // Closing a socket with unread input makes the kernel send RST, which can destroy a
  // response the client has not read yet (a 413 for a large body, say). So: send FIN,
  // then read and discard until the client closes, for a bounded time and size.
  void linger_close() {
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTimeout);
    linger_read();
  }

  void linger_read() {
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(16 << 10),
                            [self = shared_from_this()](error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > kMaxLingerBytes) return self->close();
                              self->linger_read();
                            });
  }

  beast::tcp_stream stream_;
  net::steady_timer probe_timer_{stream_.get_executor()};
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Shared& shared_;

  uint64_t exchange_ = 0;         // id of the current (or last) exchange
  bool in_exchange_ = false;      // a request was handed over and its response is not written
  bool response_queued_ = false;  // the handler has queued the whole response
  bool streaming_ = false;
  bool sse_ = false;  // the stream is text/event-stream (comments are harmless filler)
  bool keep_alive_ = true;
  bool http11_ = true;
  bool read_closed_ = false;  // the client half-closed (or closed) its side
  int n_probes_ = 0;
  bool watching_ = false;
  enum class AfterWatch { kNothing, kNextRequest, kLinger };
  AfterWatch after_watch_ = AfterWatch::kNothing;  // what the exchange's end left to do
  bool gone_ = false;
  std::function<void()> on_disconnect_;
  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  size_t lingered_ = 0;
};

class SessionResponder final : public Responder {
 public:
  SessionResponder(std::shared_ptr<Session> session, uint64_t exchange)
      : session_(std::move(session)), exchange_(exchange) {}

  void send(HttpResponse response) override {
    session_->on_strand(exchange_,
                        [r = std::move(response)](Session& s) mutable { s.send(std::move(r)); });
  }
  void start_stream(int status, std::string content_type) override {
    session_->on_strand(exchange_, [status, ct = std::move(content_type)](Session& s) {
      s.start_stream(status, ct);
    });
  }
  void write(std::string data) override {
    session_->on_strand(exchange_, [d = std::move(data)](Session& s) { s.write_chunk(d); });
  }
  void finish() override {
    session_->on_strand(exchange_, [](Session& s) { s.finish_stream(); });
  }
  void post(std::function<void()> fn) override { session_->post(std::move(fn)); }
  void on_disconnect(std::function<void()> fn) override {
    session_->on_strand(
        exchange_, [f = std::move(fn)](Session& s) mutable { s.set_on_disconnect(std::move(f)); });
  }

 private:
  std::shared_ptr<Session> session_;
  uint64_t exchange_;
};

std::shared_ptr<Responder> Session::make_responder() {
  return std::make_shared<SessionResponder>(shared_from_this(), exchange_);
}

}  // namespace

struct HttpServer::Impl {
  Shared shared;
  net::io_context ioc;
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer retry{acceptor.get_executor()};
  std::vector<std::thread> threads;
  bool stopped = false;

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) {
        // Out of file descriptors, say: try again shortly rather than spin.
        std::fprintf(stderr, "strata serve: accept: %s\n", ec.message().c_str());
        retry.expires_after(std::chrono::milliseconds(50));
        retry.async_wait([this](error_code) { accept(); });
        return;
      }
      std::make_shared<Session>(std::move(socket), shared)->start();
      accept();
    });
  }
};

HttpServer::HttpServer(const HttpServerConfig& config, HttpHandler handler)
    : impl_(std::make_unique<Impl>()) {
  impl_->shared.config = config;
  impl_->shared.handler = std::move(handler);
  const std::string where = config.host + ":" + std::to_string(config.port);
  error_code ec;
  const auto address = net::ip::make_address(config.host, ec);
  if (ec) throw Error("--host: '" + config.host + "' is not an IP address");
  const tcp::endpoint ep(address, config.port);
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) throw Error("--port: cannot listen on " + where + ": " + ec.message());
}

HttpServer::~HttpServer() {
  stop();
}

uint16_t HttpServer::port() const {
  error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

void HttpServer::start() {
  impl_->accept();
  const int n = std::max(1, impl_->shared.config.io_threads);
  for (int i = 0; i < n; ++i) {
    impl_->threads.emplace_back([this] {
      // A handler that throws leaves run() (Asio's rule); log it and go on serving
      // rather than let the exception end the thread and the process.
      for (;;) {
        try {
          impl_->ioc.run();
          return;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "strata serve: I/O handler failed: %s\n", e.what());
        }
      }
    });
  }
}

void HttpServer::stop_accepting() {
  net::dispatch(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry.cancel();
  });
}

size_t HttpServer::busy() const {
  return impl_->shared.busy.load();
}

uint64_t HttpServer::exchanges() const {
  return impl_->shared.exchanges.load();
}

void HttpServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace strata::server
