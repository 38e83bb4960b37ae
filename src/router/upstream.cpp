#include "router/upstream.h"

#include <utility>  // asio 1.74's awaitable.hpp needs std::exchange
// (keep <utility> first)
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <limits>

namespace strata::router {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

UpstreamResult upstream_exchange(const std::string& host, const std::string& port,
                                 const std::string& method, const std::string& target,
                                 const std::string& body, const UpstreamTimeouts& timeouts,
                                 const std::function<bool(const UpstreamHead&)>& on_head,
                                 const std::function<void(std::string_view)>& on_data) {
  net::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return {UpstreamFailure::kConnect, "resolve " + host + ": " + ec.message()};
  stream.expires_after(seconds(timeouts.connect_s));
  stream.connect(endpoints, ec);
  if (ec) return {UpstreamFailure::kConnect, "connect " + host + ":" + port + ": " + ec.message()};

  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, host + ":" + port);
  req.set(http::field::user_agent, "strata-router");
  if (method == "POST") {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.keep_alive(false);
  req.prepare_payload();
  stream.expires_after(seconds(timeouts.connect_s + timeouts.first_byte_s));
  http::write(stream, req, ec);
  if (ec) return {UpstreamFailure::kHead, "write: " + ec.message()};

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // Relayed piece by piece; the replica bounds its answers.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(stream, buffer, parser, ec);
  if (ec) return {UpstreamFailure::kHead, "response head: " + ec.message()};
  UpstreamHead head;
  head.status = static_cast<int>(parser.get().result_int());
  head.content_type = std::string(parser.get()[http::field::content_type]);
  if (!on_head(head)) return {};
  char chunk[16384];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    stream.expires_after(seconds(timeouts.idle_s));
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return {UpstreamFailure::kBody, "response body: " + ec.message()};
    const size_t n = sizeof chunk - parser.get().body().size;
    if (n > 0) on_data(std::string_view(chunk, n));
  }
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  return {};
}

}  // namespace strata::router
