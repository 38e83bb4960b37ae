// The TCP transport of KV messages (Asio): a sender that connects, writes one message
// and waits for the receiver's verdict, and a receiver that accepts connections and
// hands each well-formed message to a handler. It knows nothing of the format beyond
// the fixed header prefix, which bounds how much it reads before buffering.
//
// Reply on the wire: u8 status (0 = imported, 1 = rejected), u32 text bytes, text.
// Every read and write has a deadline; a peer that stalls, sends too much or sends
// garbage is answered with an error (when possible) and its connection closed.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>  // before any asio header: its awaitable.hpp uses std::exchange
#include <vector>

#include "disagg/kv_format.h"

namespace strata::disagg {

struct TcpTransportOptions {
  double io_timeout_s = 10;           // deadline of each connect/read/write phase
  double rate_limit_bytes_per_s = 0;  // sender-side cap (0: none), for slow-link experiments
  KvFormatLimits limits;
};

// Sends `message` (encoded wire bytes) to host:port; returns the receiver's reply text.
// Throws strata::Error on connection failure, a timeout, or a rejection (its text).
std::string send_kv_message(const std::string& host, uint16_t port,
                            std::span<const uint8_t> message, const TcpTransportOptions& options);

// Accepts connections on host:port (port 0: any) on its own thread, one connection at a
// time. `handler` receives each decoded message; its return value is the reply text and
// a strata::Error it throws becomes a rejection.
class TcpKvReceiver {
 public:
  using Handler = std::function<std::string(KvMessage)>;
  TcpKvReceiver(const std::string& host, uint16_t port, TcpTransportOptions options,
                Handler handler);
  ~TcpKvReceiver();
  TcpKvReceiver(const TcpKvReceiver&) = delete;
  TcpKvReceiver& operator=(const TcpKvReceiver&) = delete;

  uint16_t port() const { return port_; }
  uint64_t rejected() const { return rejected_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> rejected_{0};
  std::thread thread_;
};

}  // namespace strata::disagg
