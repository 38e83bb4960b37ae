#include "disagg/tcp_transport.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <chrono>
#include <cstring>

#include "core/error.h"

namespace strata::disagg {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

std::chrono::milliseconds to_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000));
}

// Runs the pending async operation to completion or the deadline; on the deadline the
// socket is closed (cancelling it) and the phase named `what` throws.
void run_until(asio::io_context& io, tcp::socket& socket, double timeout_s, const char* what) {
  io.restart();
  io.run_for(to_ms(timeout_s));
  if (!io.stopped()) {
    boost::system::error_code ignored;
    socket.close(ignored);
    io.run();
    throw Error(std::string("KV transport: ") + what + " timed out");
  }
}

void read_exact(asio::io_context& io, tcp::socket& s, void* p, size_t n, double timeout_s,
                const char* what) {
  boost::system::error_code ec;
  asio::async_read(s, asio::buffer(p, n), [&](boost::system::error_code e, size_t) { ec = e; });
  run_until(io, s, timeout_s, what);
  if (ec) throw Error(std::string("KV transport: ") + what + ": " + ec.message());
}

void write_all(asio::io_context& io, tcp::socket& s, const void* p, size_t n, double timeout_s,
               const char* what) {
  boost::system::error_code ec;
  asio::async_write(s, asio::buffer(p, n), [&](boost::system::error_code e, size_t) { ec = e; });
  run_until(io, s, timeout_s, what);
  if (ec) throw Error(std::string("KV transport: ") + what + ": " + ec.message());
}

std::vector<uint8_t> reply_bytes(uint8_t status, const std::string& text) {
  std::vector<uint8_t> out(5 + text.size());
  out[0] = status;
  const uint32_t n = static_cast<uint32_t>(text.size());
  std::memcpy(out.data() + 1, &n, 4);
  std::memcpy(out.data() + 5, text.data(), text.size());
  return out;
}

constexpr uint32_t kMaxReplyBytes = 64 * 1024;

}  // namespace

std::string send_kv_message(const std::string& host, uint16_t port,
                            std::span<const uint8_t> message, const TcpTransportOptions& o) {
  asio::io_context io;
  tcp::socket s(io);
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) throw Error("KV transport: cannot resolve " + host + ": " + ec.message());
  asio::async_connect(s, endpoints,
                      [&](boost::system::error_code e, const tcp::endpoint&) { ec = e; });
  run_until(io, s, o.io_timeout_s, "connect");
  if (ec)
    throw Error("KV transport: connect to " + host + ":" + std::to_string(port) + ": " +
                ec.message());
  s.set_option(tcp::no_delay(true));
  // The rate limit paces 64 KiB chunks against the wall clock since the first byte.
  const size_t chunk = o.rate_limit_bytes_per_s > 0 ? 64 * 1024 : message.size();
  const auto start = std::chrono::steady_clock::now();
  for (size_t at = 0; at < message.size(); at += chunk) {
    const size_t n = std::min(chunk, message.size() - at);
    write_all(io, s, message.data() + at, n, o.io_timeout_s, "send");
    if (o.rate_limit_bytes_per_s > 0) {
      const auto due = start + std::chrono::duration<double>(static_cast<double>(at + n) /
                                                             o.rate_limit_bytes_per_s);
      std::this_thread::sleep_until(due);
    }
  }
  uint8_t head[5];
  read_exact(io, s, head, 5, o.io_timeout_s, "reply");
  uint32_t n;
  std::memcpy(&n, head + 1, 4);
  if (n > kMaxReplyBytes)
    throw Error("KV transport: reply of " + std::to_string(n) + " bytes is too long");
  std::string text(n, '\0');
  if (n) read_exact(io, s, text.data(), n, o.io_timeout_s, "reply text");
  if (head[0] != 0) throw Error("KV transfer rejected by the receiver: " + text);
  return text;
}

struct TcpKvReceiver::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::atomic<bool> stop{false};
};

TcpKvReceiver::TcpKvReceiver(const std::string& host, uint16_t port, TcpTransportOptions o,
                             Handler handler)
    : impl_(std::make_unique<Impl>()) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  if (ec) throw Error("--kv-listen: bad address '" + host + "': " + ec.message());
  const tcp::endpoint ep(addr, port);
  impl_->acceptor.open(ep.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(ep, ec);
  if (ec)
    throw Error("--kv-listen: cannot bind " + host + ":" + std::to_string(port) + ": " +
                ec.message());
  impl_->acceptor.listen();
  port_ = impl_->acceptor.local_endpoint().port();
  thread_ = std::thread([this, o, handler = std::move(handler)] {
    Impl& im = *impl_;
    while (!im.stop.load()) {
      tcp::socket s(im.io);
      boost::system::error_code aec = asio::error::would_block;
      im.acceptor.async_accept(s, [&](boost::system::error_code e) { aec = e; });
      im.io.restart();
      // Wake up regularly to notice stop; the acceptor keeps its pending accept.
      while (aec == asio::error::would_block && !im.stop.load()) {
        im.io.restart();
        im.io.run_for(std::chrono::milliseconds(100));
      }
      if (im.stop.load()) break;
      if (aec) continue;
      try {
        std::vector<uint8_t> msg(kKvHeaderBytes);
        read_exact(im.io, s, msg.data(), msg.size(), o.io_timeout_s, "header");
        uint8_t status = 0;
        std::string text;
        try {
          const uint64_t total = kv_message_size_from_header(msg, o.limits);
          msg.resize(total);
          read_exact(im.io, s, msg.data() + kKvHeaderBytes, total - kKvHeaderBytes, o.io_timeout_s,
                     "message");
          text = handler(decode_kv_message(msg, o.limits));
        } catch (const Error& e) {
          status = 1;
          text = e.what();
          rejected_.fetch_add(1);
        }
        const auto reply = reply_bytes(status, text.substr(0, kMaxReplyBytes));
        write_all(im.io, s, reply.data(), reply.size(), o.io_timeout_s, "reply");
      } catch (const Error&) {
        rejected_.fetch_add(1);  // a stalled or vanished peer: drop the connection
      }
      boost::system::error_code ignored;
      s.close(ignored);
    }
  });
}

TcpKvReceiver::~TcpKvReceiver() {
  impl_->stop.store(true);
  if (thread_.joinable()) thread_.join();
}

}  // namespace strata::disagg
