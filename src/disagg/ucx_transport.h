// The UCX transport of KV messages (UCP active messages over a client-server endpoint):
// on these machines UCX runs over TCP and shared memory, on a cluster over RDMA. Built
// only when libucx is found (STRATA_HAVE_UCX); kv_transport.h is the seam callers use.
//
// The sender connects to the receiver's listener (a sockaddr), sends one active message
// whose AM header is the 40-byte format prefix and whose data is the rest, and waits for
// the reply active message: u8 status (0 = imported, 1 = rejected), u32 text bytes, text.
// The receiver checks the header (exactly the prefix, KvFormatLimits, announced size =
// data size) before it allocates the buffer and pulls the data (rendezvous: nothing
// beyond UCX's eager fragment moves before that), decodes, calls its handler and replies.
// One message at a time per endpoint; the sender keeps its endpoint for the next message
// (a UCX connection costs milliseconds) while it is well inside the receiver's idle
// deadline, and reconnects and resends once if a kept endpoint turns out to be closed
// before any reply (so a message can arrive twice: imports are idempotent by key).
// Every phase on both sides has a deadline; a peer that stalls is force-closed at its
// deadline and the receiver, which serves endpoints concurrently, serves the others.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "disagg/kv_format.h"

namespace strata::disagg {

struct UcxTransportOptions {
  double io_timeout_s = 10;    // deadline of each connect+send/receive/reply phase
  double idle_timeout_s = 30;  // receiver: closes an endpoint idle this long after a reply
  KvFormatLimits limits;
  // UCX transports to use ("tcp", "tcp,sm,self"; empty: UCX's choice, which honours
  // the UCX_TLS environment variable).
  std::string tls;
};

// A UCP context, worker and the last endpoint, kept across sends. Sends are serialized
// by a mutex.
class UcxKvSender {
 public:
  explicit UcxKvSender(UcxTransportOptions options);
  ~UcxKvSender();
  UcxKvSender(const UcxKvSender&) = delete;
  UcxKvSender& operator=(const UcxKvSender&) = delete;

  // Sends `message` to host:port; returns the receiver's reply text. Throws strata::Error
  // on connection failure, a deadline, or a rejection (its text).
  std::string send(const std::string& host, uint16_t port, std::span<const uint8_t> message);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
};

// Listens on host:port (port 0: any) with its own context, worker and thread. `handler`
// receives each decoded message; its return value is the reply text and a strata::Error
// (or any std::exception) it throws becomes a rejection.
class UcxKvReceiver {
 public:
  using Handler = std::function<std::string(KvMessage)>;
  UcxKvReceiver(const std::string& host, uint16_t port, UcxTransportOptions options,
                Handler handler);
  ~UcxKvReceiver();
  UcxKvReceiver(const UcxKvReceiver&) = delete;
  UcxKvReceiver& operator=(const UcxKvReceiver&) = delete;

  uint16_t port() const { return port_; }
  // Messages refused plus peers dropped (stalled, vanished, or over the connection cap).
  uint64_t rejected() const { return rejected_.load(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> rejected_{0};
  std::thread thread_;
};

}  // namespace strata::disagg
