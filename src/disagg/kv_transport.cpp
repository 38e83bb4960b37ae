// The transport factory, and the thin adapters of the TCP and UCX transports to the
// kv_transport.h seam (their own free functions and classes stay as they are).
#include "disagg/kv_transport.h"

#include "core/error.h"
#include "disagg/tcp_transport.h"
#ifdef STRATA_HAVE_UCX
#include "disagg/ucx_transport.h"
#endif

namespace strata::disagg {
namespace {

TcpTransportOptions tcp_options(const KvTransportOptions& o) {
  TcpTransportOptions t;
  t.io_timeout_s = o.io_timeout_s;
  t.rate_limit_bytes_per_s = o.rate_limit_bytes_per_s;
  t.limits = o.limits;
  return t;
}

class TcpSender final : public KvSender {
 public:
  explicit TcpSender(const KvTransportOptions& o) : o_(tcp_options(o)) {}
  std::string send(const std::string& host, uint16_t port,
                   std::span<const uint8_t> message) override {
    return send_kv_message(host, port, message, o_);
  }

 private:
  TcpTransportOptions o_;
};

class TcpReceiver final : public KvReceiver {
 public:
  TcpReceiver(const std::string& host, uint16_t port, const KvTransportOptions& o, Handler handler)
      : r_(host, port, tcp_options(o), std::move(handler)) {}
  uint16_t port() const override { return r_.port(); }
  uint64_t rejected() const override { return r_.rejected(); }

 private:
  TcpKvReceiver r_;
};

#ifdef STRATA_HAVE_UCX
UcxTransportOptions ucx_options(const KvTransportOptions& o) {
  if (o.rate_limit_bytes_per_s > 0)
    throw Error("--kv-transport ucx: the rate limit is a TCP transport option");
  UcxTransportOptions u;
  u.io_timeout_s = o.io_timeout_s;
  u.limits = o.limits;
  return u;
}

class UcxSender final : public KvSender {
 public:
  explicit UcxSender(const KvTransportOptions& o) : s_(ucx_options(o)) {}
  std::string send(const std::string& host, uint16_t port,
                   std::span<const uint8_t> message) override {
    return s_.send(host, port, message);
  }

 private:
  UcxKvSender s_;
};

class UcxReceiver final : public KvReceiver {
 public:
  UcxReceiver(const std::string& host, uint16_t port, const KvTransportOptions& o, Handler handler)
      : r_(host, port, ucx_options(o), std::move(handler)) {}
  uint16_t port() const override { return r_.port(); }
  uint64_t rejected() const override { return r_.rejected(); }

 private:
  UcxKvReceiver r_;
};
#endif

[[noreturn]] void unknown(const std::string& kind) {
  if (kind == "ucx")
    throw Error("--kv-transport ucx: ucx transport not built (libucx-dev missing)");
  throw Error("--kv-transport: unknown transport '" + kind + "' (tcp or ucx)");
}

}  // namespace

std::vector<std::string> kv_transport_kinds() {
#ifdef STRATA_HAVE_UCX
  return {"tcp", "ucx"};
#else
  return {"tcp"};
#endif
}

std::unique_ptr<KvSender> make_kv_sender(const std::string& kind,
                                         const KvTransportOptions& options) {
  if (kind == "tcp") return std::make_unique<TcpSender>(options);
#ifdef STRATA_HAVE_UCX
  if (kind == "ucx") return std::make_unique<UcxSender>(options);
#endif
  unknown(kind);
}

std::unique_ptr<KvReceiver> make_kv_receiver(const std::string& kind, const std::string& host,
                                             uint16_t port, const KvTransportOptions& options,
                                             KvReceiver::Handler handler) {
  if (kind == "tcp") return std::make_unique<TcpReceiver>(host, port, options, std::move(handler));
#ifdef STRATA_HAVE_UCX
  if (kind == "ucx") return std::make_unique<UcxReceiver>(host, port, options, std::move(handler));
#endif
  unknown(kind);
}

}  // namespace strata::disagg
