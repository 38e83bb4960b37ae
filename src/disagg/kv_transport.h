// The transport-neutral seam of prefill/decode disaggregation: a sender that delivers one
// encoded KV message (kv_format.h) to a receiver's address and returns its verdict, and a
// receiver that listens on host:port and hands each well-formed message to a handler.
// Two transports implement it: "tcp" (tcp_transport.h, always built) and "ucx"
// (ucx_transport.h, built when libucx is found; STRATA_HAVE_UCX). The semantics are the
// same for both (docs/DISAGGREGATION.md, "Transports"): the fixed header prefix is checked
// against KvFormatLimits before the rest is buffered, every phase has a deadline, the
// reply is u8 status + text, and a strata::Error thrown by the handler becomes a rejection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "disagg/kv_format.h"

namespace strata::disagg {

struct KvTransportOptions {
  double io_timeout_s = 10;           // deadline of each connect/send/receive/reply phase
  double rate_limit_bytes_per_s = 0;  // sender-side cap (0: none); TCP only
  KvFormatLimits limits;              // what a receiver accepts
};

class KvSender {
 public:
  virtual ~KvSender() = default;
  // Sends `message` (encoded wire bytes) to host:port and returns the receiver's reply
  // text. Throws strata::Error on connection failure, a deadline, or a rejection (its
  // text). Safe to call from several threads (sends are serialized per sender).
  virtual std::string send(const std::string& host, uint16_t port,
                           std::span<const uint8_t> message) = 0;
};

class KvReceiver {
 public:
  // Receives each decoded message on the receiver's own thread; the return value is the
  // reply text, and a strata::Error it throws becomes a rejection.
  using Handler = std::function<std::string(KvMessage)>;
  virtual ~KvReceiver() = default;
  virtual uint16_t port() const = 0;      // the bound port (useful after port 0)
  virtual uint64_t rejected() const = 0;  // messages refused and peers dropped
};

// The transports this build has: {"tcp"} or {"tcp", "ucx"}.
std::vector<std::string> kv_transport_kinds();

// `kind` is "tcp" or "ucx". Throws strata::Error naming the kind when it is unknown or
// not built ("ucx transport not built"), when an option does not apply to it, or when the
// transport cannot start (UCX context, bind).
std::unique_ptr<KvSender> make_kv_sender(const std::string& kind,
                                         const KvTransportOptions& options);
std::unique_ptr<KvReceiver> make_kv_receiver(const std::string& kind, const std::string& host,
                                             uint16_t port, const KvTransportOptions& options,
                                             KvReceiver::Handler handler);

}  // namespace strata::disagg
