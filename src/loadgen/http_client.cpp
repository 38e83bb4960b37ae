#include "loadgen/http_client.h"

#include <utility>  // asio 1.74's awaitable.hpp needs std::exchange
// (keep <utility> first)
#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <limits>

#include "core/clock.h"
#include "core/error.h"

namespace strata::loadgen {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

http::request<http::string_body> make_request(http::verb verb, const Url& url,
                                              const std::string& path, const std::string& api_key,
                                              std::string body, bool stream) {
  http::request<http::string_body> req{verb, url.base_path + path, 11};
  req.set(http::field::host, url.host + ":" + url.port);
  req.set(http::field::user_agent, "strata-bench-serve");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  if (stream) req.set(http::field::accept, "text/event-stream");
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

}  // namespace

Url parse_base_url(const std::string& text) {
  const std::string scheme = "http://";
  if (text.rfind(scheme, 0) != 0) {
    throw Error("--base-url: expected http://HOST[:PORT][/PREFIX], got '" + text + "'");
  }
  std::string rest = text.substr(scheme.size());
  Url u;
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    u.base_path = rest.substr(slash);
    rest.resize(slash);
    while (!u.base_path.empty() && u.base_path.back() == '/') u.base_path.pop_back();
  }
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    u.port = rest.substr(colon + 1);
    rest.resize(colon);
  } else {
    u.port = "80";
  }
  if (rest.size() > 2 && rest.front() == '[' && rest.back() == ']')
    rest = rest.substr(1, rest.size() - 2);
  u.host = rest;
  const bool port_ok = !u.port.empty() && u.port.size() <= 5 &&
                       u.port.find_first_not_of("0123456789") == std::string::npos &&
                       std::stoi(u.port) > 0 && std::stoi(u.port) < 65536;
  if (u.host.empty() || !port_ok) {
    throw Error("--base-url: expected http://HOST[:PORT][/PREFIX], got '" + text + "'");
  }
  return u;
}

// ---------------------------------------------------------------------------------------
// HttpClient

struct HttpClient::Impl {
  Url url;
  std::string api_key;
  double timeout_s;
  net::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  bool connected = false;

  void connect() {
    buffer.clear();
    tcp::resolver resolver(io);
    beast::error_code ec;
    const auto endpoints = resolver.resolve(url.host, url.port, ec);
    if (ec) throw Error("cannot resolve " + url.host + ": " + ec.message());
    stream.expires_after(seconds(timeout_s));
    stream.connect(endpoints, ec);
    if (ec) {
      throw Error("cannot connect to " + url.host + ":" + url.port + ": " + ec.message());
    }
    connected = true;
  }

  void close() {
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream.close();
    connected = false;
  }

  HttpResponse exchange(http::verb verb, const std::string& path, const std::string& body) {
    // A kept-alive connection the server has closed fails on first use: retry once fresh.
    for (int attempt = 0;; ++attempt) {
      const bool reused = connected;
      if (!connected) connect();
      try {
        auto req = make_request(verb, url, path, api_key, body, false);
        stream.expires_after(seconds(timeout_s));
        http::write(stream, req);
        http::response<http::string_body> res;
        http::read(stream, buffer, res);
        if (!res.keep_alive()) close();
        return {static_cast<int>(res.result_int()), std::move(res.body())};
      } catch (const std::exception& e) {
        close();
        if (!reused || attempt > 0) {
          throw Error(std::string(http::to_string(verb)) + " " + url.base_path + path + ": " +
                      e.what());
        }
      }
    }
  }
};

HttpClient::HttpClient(Url url, std::string api_key, double timeout_s)
    : impl_(std::make_unique<Impl>()) {
  impl_->url = std::move(url);
  impl_->api_key = std::move(api_key);
  impl_->timeout_s = timeout_s;
}

HttpClient::~HttpClient() {
  if (impl_->connected) impl_->close();
}

HttpResponse HttpClient::get(const std::string& path) {
  return impl_->exchange(http::verb::get, path, {});
}

HttpResponse HttpClient::post_json(const std::string& path, const std::string& body) {
  return impl_->exchange(http::verb::post, path, body);
}

// ---------------------------------------------------------------------------------------
// EventLoop

struct EventLoop::Impl {
  Url url;
  std::string api_key;
  double timeout_s;
  net::io_context io{1};
  tcp::resolver::results_type endpoints;

  net::awaitable<void> stream_post(std::string path, std::string body, StreamHandler h) {
    std::string error;
    try {
      co_await exchange(path, std::move(body), h);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "transport error";
    }
    h.on_end(error);
  }

  net::awaitable<void> exchange(const std::string& path, std::string body, StreamHandler& h) {
    beast::tcp_stream stream(co_await net::this_coro::executor);
    stream.expires_after(seconds(timeout_s));
    co_await stream.async_connect(endpoints, net::use_awaitable);
    stream.socket().set_option(tcp::no_delay(true));
    auto req = make_request(http::verb::post, url, path, api_key, std::move(body), true);
    stream.expires_after(seconds(timeout_s));
    co_await http::async_write(stream, req, net::use_awaitable);

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    stream.expires_after(seconds(timeout_s));
    co_await http::async_read_header(stream, buffer, parser, net::use_awaitable);
    h.on_head(static_cast<int>(parser.get().result_int()));
    char data[16384];
    while (!parser.is_done()) {
      parser.get().body().data = data;
      parser.get().body().size = sizeof data;
      stream.expires_after(seconds(timeout_s));
      beast::error_code ec;
      co_await http::async_read_some(stream, buffer, parser,
                                     net::redirect_error(net::use_awaitable, ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw beast::system_error(ec);
      const size_t n = sizeof data - parser.get().body().size;
      if (n > 0) h.on_data(std::string_view(data, n));
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
};

EventLoop::EventLoop(Url url, std::string api_key, double timeout_s)
    : impl_(std::make_unique<Impl>()) {
  impl_->url = std::move(url);
  impl_->api_key = std::move(api_key);
  impl_->timeout_s = timeout_s;
  tcp::resolver resolver(impl_->io);
  beast::error_code ec;
  impl_->endpoints = resolver.resolve(impl_->url.host, impl_->url.port, ec);
  if (ec) throw Error("cannot resolve " + impl_->url.host + ": " + ec.message());
}

EventLoop::~EventLoop() = default;

void EventLoop::post_stream(const std::string& path, std::string body, StreamHandler handler) {
  net::co_spawn(impl_->io, impl_->stream_post(path, std::move(body), std::move(handler)),
                net::detached);
}

void EventLoop::after(double s, std::function<void()> fn) {
  auto timer = std::make_shared<net::steady_timer>(impl_->io, seconds(std::max(0.0, s)));
  timer->async_wait([timer, fn = std::move(fn)](const beast::error_code&) { fn(); });
}

void EventLoop::run() {
  impl_->io.restart();
  impl_->io.run();
}

double EventLoop::now_s() const {
  return steady_now_s();
}

}  // namespace strata::loadgen
