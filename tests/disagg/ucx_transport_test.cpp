// The UCX transport over loopback (UCX's TCP transport here, so the rendezvous path runs
// and a peer that stops progressing really stalls its transfer): messages arrive intact,
// rejections reach the sender, peers that connect and stay silent, stop mid-message or
// speak plain garbage TCP are dropped at the deadline while the receiver keeps serving,
// and a 64 MiB message arrives. Skipped when UCX is not built or cannot start here.

#ifdef STRATA_HAVE_UCX

#include "disagg/ucx_transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/error.h"
#include "disagg/transport_message.h"

namespace strata::disagg {
namespace {

using testing::transport_message;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

UcxTransportOptions options(double timeout_s) {
  UcxTransportOptions o;
  o.io_timeout_s = timeout_s;
  o.tls = "tcp";
  return o;
}

struct Fixture {
  UcxTransportOptions o;
  std::mutex mu;
  std::vector<KvMessage> got;
  std::unique_ptr<UcxKvReceiver> receiver;
  std::unique_ptr<UcxKvSender> sender;
  std::string skip;  // why UCX cannot run here, if it cannot

  explicit Fixture(double timeout_s = 2) : o(options(timeout_s)) {
    try {
      receiver = std::make_unique<UcxKvReceiver>("127.0.0.1", 0, o, [this](KvMessage m) {
        if (m.model_fingerprint != 7) throw Error("wrong model fingerprint");
        check_block_keys(m, 7, 1u << 20);
        std::lock_guard lock(mu);
        got.push_back(std::move(m));
        return std::string("imported");
      });
      sender = std::make_unique<UcxKvSender>(o);
    } catch (const Error& e) {
      skip = e.what();
    }
  }
  std::string send(std::span<const uint8_t> bytes) {
    return sender->send("127.0.0.1", receiver->port(), bytes);
  }
};

#define SKIP_WITHOUT_UCX(f) \
  if (!(f).skip.empty()) GTEST_SKIP() << "UCX cannot start here: " << (f).skip

// A raw UCP client: connects to the receiver and then does only what a test tells it.
struct RawPeer {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;
  int replies = 0;
  explicit RawPeer(uint16_t port) {
    ucp_config_t* config;
    EXPECT_EQ(ucp_config_read(nullptr, nullptr, &config), UCS_OK);
    ucp_config_modify(config, "TLS", "tcp");
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_AM;
    EXPECT_EQ(ucp_init(&p, config, &context), UCS_OK);
    ucp_config_release(config);
    ucp_worker_params_t wp{};
    EXPECT_EQ(ucp_worker_create(context, &wp, &worker), UCS_OK);
    ucp_am_handler_param_t h{};
    h.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    h.id = 2;  // the receiver's reply
    h.flags = UCP_AM_FLAG_WHOLE_MSG;
    h.cb = [](void* arg, const void*, size_t, void*, size_t, const ucp_am_recv_param_t*) {
      ++*static_cast<int*>(arg);
      return UCS_OK;
    };
    h.arg = &replies;
    EXPECT_EQ(ucp_worker_set_am_recv_handler(worker, &h), UCS_OK);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                           UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep_params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    ep_params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&a);
    ep_params.sockaddr.addrlen = sizeof(a);
    ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep_params.err_handler.cb = [](void*, ucp_ep_h, ucs_status_t) {};
    EXPECT_EQ(ucp_ep_create(worker, &ep_params, &ep), UCS_OK);
  }
  void progress_for(double s) {
    const auto t0 = Clock::now();
    while (since(t0) < s) ucp_worker_progress(worker);
  }
  ~RawPeer() {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* r = ucp_ep_close_nbx(ep, &p);
    const auto t0 = Clock::now();
    while (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) == UCS_INPROGRESS &&
           since(t0) < 1)
      ucp_worker_progress(worker);
    if (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) != UCS_INPROGRESS)
      ucp_request_free(r);
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
  }
};

TEST(UcxTransport, MessageArrivesIntact) {
  Fixture f;
  SKIP_WITHOUT_UCX(f);
  const KvMessage m = transport_message(5, 256);
  EXPECT_EQ(f.send(encode_kv_message(m)), "imported");
  EXPECT_EQ(f.send(encode_kv_message(m)), "imported");  // the sender's worker is reused
  std::lock_guard lock(f.mu);
  ASSERT_EQ(f.got.size(), 2u);
  EXPECT_EQ(f.got[0].payload, m.payload);
  EXPECT_EQ(f.got[0].keys, m.keys);
  EXPECT_EQ(f.got[1].tokens, m.tokens);
  EXPECT_EQ(f.receiver->rejected(), 0u);
}

TEST(UcxTransport, RejectionsReachTheSenderAndTheReceiverKeepsServing) {
  Fixture f;
  SKIP_WITHOUT_UCX(f);
  auto expect_rejected = [&](std::span<const uint8_t> bytes, const char* why) {
    try {
      f.send(bytes);
      ADD_FAILURE() << "accepted; expected a rejection for " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("rejected"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  expect_rejected(encode_kv_message(transport_message(2, 64, 8)), "wrong model");
  auto corrupt = encode_kv_message(transport_message(2, 64));
  corrupt[60] ^= 1;
  expect_rejected(corrupt, "checksum");
  const std::vector<uint8_t> garbage(100, 0xab);
  expect_rejected(garbage, "magic");
  expect_rejected(std::span(garbage).first(10), "header of 10 bytes");
  auto truncated = encode_kv_message(transport_message(2, 64));
  truncated.pop_back();
  expect_rejected(truncated, "announces");
  // A prefix announcing 16 GiB is refused from the header alone (nothing allocated).
  auto huge = encode_kv_message(transport_message(1, 64));
  const uint64_t big = 16ull << 30;
  std::memcpy(huge.data() + kKvHeaderBytes - 8, &big, 8);
  EXPECT_THROW(f.send(huge), Error);
  EXPECT_EQ(f.send(encode_kv_message(transport_message(1, 64))), "imported");
  EXPECT_EQ(f.receiver->rejected(), 6u);
}

TEST(UcxTransport, SilentPeerIsDroppedAtTheDeadlineWhileOthersAreServed) {
  Fixture f(0.3);
  SKIP_WITHOUT_UCX(f);
  RawPeer silent(f.receiver->port());
  silent.progress_for(0.05);  // connected, never sends
  const auto t0 = Clock::now();
  EXPECT_EQ(f.send(encode_kv_message(transport_message(1, 64))), "imported");
  EXPECT_LT(since(t0), 0.25);  // served at once: endpoints are served concurrently
  while (f.receiver->rejected() == 0 && since(t0) < 3) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(f.receiver->rejected(), 1u);
  EXPECT_EQ(f.send(encode_kv_message(transport_message(1, 64))), "imported");
}

// Starts `big` by rendezvous from `peer` after wiring the endpoint up with a small
// message, and stops progressing 2 ms later: the receiver holds a part-filled buffer.
void* stall_mid_message(RawPeer& peer, const std::vector<uint8_t>& big) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY;
  const auto small = encode_kv_message(transport_message(1, 64));
  void* s0 = ucp_am_send_nbx(peer.ep, 1, small.data(), kKvHeaderBytes,
                             small.data() + kKvHeaderBytes, small.size() - kKvHeaderBytes, &p);
  for (const auto t = Clock::now(); peer.replies == 0 && since(t) < 2;) peer.progress_for(0.001);
  EXPECT_EQ(peer.replies, 1);
  if (s0 && !UCS_PTR_IS_ERR(s0) && ucp_request_check_status(s0) != UCS_INPROGRESS)
    ucp_request_free(s0);
  p.flags = UCP_AM_SEND_FLAG_RNDV | UCP_AM_SEND_FLAG_REPLY;
  void* r = ucp_am_send_nbx(peer.ep, 1, big.data(), kKvHeaderBytes, big.data() + kKvHeaderBytes,
                            big.size() - kKvHeaderBytes, &p);
  EXPECT_FALSE(UCS_PTR_IS_ERR(r));
  peer.progress_for(0.002);
  return r;
}

void finish(RawPeer& peer, void* r) {
  peer.progress_for(0.05);
  if (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) != UCS_INPROGRESS) ucp_request_free(r);
}

TEST(UcxTransport, PeerStallingMidMessageIsDroppedAtTheDeadline) {
  Fixture f(0.3);
  SKIP_WITHOUT_UCX(f);
  const auto bytes = encode_kv_message(transport_message(32, 1u << 20));  // 64 MiB
  RawPeer peer(f.receiver->port());
  void* r = stall_mid_message(peer, bytes);
  const auto t0 = Clock::now();
  while (f.receiver->rejected() == 0 && since(t0) < 3) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(f.receiver->rejected(), 1u);
  EXPECT_EQ(f.send(encode_kv_message(transport_message(1, 64))), "imported");
  EXPECT_EQ(peer.replies, 1);  // the small message's only
  finish(peer, r);
}

TEST(UcxTransport, AnyMessageIdIsSafeAndPipelinedMessagesDropThePeer) {
  Fixture f(0.3);
  SKIP_WITHOUT_UCX(f);
  const auto bytes = encode_kv_message(transport_message(1, 64));
  RawPeer peer(f.receiver->port());
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY;
  std::vector<void*> sends;
  // Ids without a handler of ours (UCX 1.13 crashed on 0, 3 and large ones before the
  // receiver registered a drop handler for every id), then two messages at once.
  for (unsigned id : {0u, 2u, 3u, 9u, 5000u, 40000u, 65535u, 1u, 1u})
    sends.push_back(ucp_am_send_nbx(peer.ep, id, bytes.data(), kKvHeaderBytes,
                                    bytes.data() + kKvHeaderBytes, bytes.size() - kKvHeaderBytes,
                                    &p));
  peer.progress_for(0.2);
  // The second message either came after the first one's reply (both answered) or
  // before it (one message at a time per endpoint: the peer is dropped).
  const uint64_t dropped = f.receiver->rejected();
  EXPECT_TRUE((peer.replies == 2 && dropped == 0) || (peer.replies <= 1 && dropped == 1))
      << peer.replies << " replies, " << dropped << " dropped";
  EXPECT_EQ(f.send(bytes), "imported");
  for (void* r : sends)
    if (r && !UCS_PTR_IS_ERR(r) && ucp_request_check_status(r) != UCS_INPROGRESS)
      ucp_request_free(r);
}

TEST(UcxTransport, BufferedBytesAreBoundedAcrossEndpoints) {
  Fixture f(0.4);
  SKIP_WITHOUT_UCX(f);
  // A receiver that holds at most 48 MiB in flight, one stalled 32 MiB message, and
  // another sender's 32 MiB: refused as busy, then accepted once the stalled one is gone.
  UcxTransportOptions o = f.o;
  o.limits.max_message_bytes = 48u << 20;
  UcxKvReceiver receiver("127.0.0.1", 0, o, [](KvMessage) { return std::string("ok"); });
  const auto big = encode_kv_message(transport_message(16, 1u << 20));  // 32 MiB
  RawPeer peer(receiver.port());
  void* r = stall_mid_message(peer, big);
  UcxKvSender sender(o);
  try {
    sender.send("127.0.0.1", receiver.port(), big);
    ADD_FAILURE() << "a second 32 MiB message fitted in 48 MiB";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("busy"), std::string::npos) << e.what();
  }
  for (const auto t = Clock::now(); receiver.rejected() < 2 && since(t) < 3;)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(receiver.rejected(), 2u);  // the busy refusal and the stalled peer
  EXPECT_EQ(sender.send("127.0.0.1", receiver.port(), big), "ok");
  finish(peer, r);
}

TEST(UcxTransport, PlainTcpGarbageDoesNotStopTheReceiver) {
  Fixture f(0.3);
  SKIP_WITHOUT_UCX(f);
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(f.receiver->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(s, reinterpret_cast<const sockaddr*>(&a), sizeof(a)), 0);
  const std::vector<uint8_t> garbage(4096, 0x5a);
  EXPECT_GT(write(s, garbage.data(), garbage.size()), 0);
  const int quiet = socket(AF_INET, SOCK_STREAM, 0);  // and one that says nothing
  ASSERT_EQ(connect(quiet, reinterpret_cast<const sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(f.send(encode_kv_message(transport_message(2, 64))), "imported");
  close(s);
  close(quiet);
  EXPECT_EQ(f.send(encode_kv_message(transport_message(2, 64))), "imported");
}

TEST(UcxTransport, LargeMessageArrives) {
  Fixture f(5);
  SKIP_WITHOUT_UCX(f);
  const KvMessage m = transport_message(32, 1u << 20);  // 64 MiB of payload
  const auto bytes = encode_kv_message(m);
  const auto t0 = Clock::now();
  EXPECT_EQ(f.send(bytes), "imported");
  const double s = since(t0);
  std::lock_guard lock(f.mu);
  ASSERT_EQ(f.got.size(), 1u);
  EXPECT_TRUE(f.got[0].payload == m.payload);
  std::printf("64 MiB over UCX (tcp) loopback: %.3f s, %.0f MiB/s\n", s,
              static_cast<double>(bytes.size()) / s / (1 << 20));
}

TEST(UcxTransport, SenderReconnectsWhenTheReceiverClosedItsEndpoint) {
  Fixture f;
  SKIP_WITHOUT_UCX(f);
  const auto bytes = encode_kv_message(transport_message(1, 64));
  // A receiver that drops idle endpoints fast, and a sender that still reuses them: the
  // kept endpoint is closed under it, and it reconnects once and resends.
  UcxTransportOptions quick = f.o;
  quick.idle_timeout_s = 0.1;
  UcxKvReceiver receiver("127.0.0.1", 0, quick, [](KvMessage) { return std::string("ok"); });
  UcxTransportOptions keen = f.o;
  keen.idle_timeout_s = 60;
  UcxKvSender sender(keen);
  EXPECT_EQ(sender.send("127.0.0.1", receiver.port(), bytes), "ok");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(sender.send("127.0.0.1", receiver.port(), bytes), "ok");
  EXPECT_EQ(sender.send("127.0.0.1", receiver.port(), bytes), "ok");
  EXPECT_EQ(receiver.rejected(), 0u);
  // And one sender serves two receivers in turn.
  EXPECT_EQ(sender.send("127.0.0.1", f.receiver->port(), bytes), "imported");
  EXPECT_EQ(sender.send("127.0.0.1", receiver.port(), bytes), "ok");
}

TEST(UcxTransport, ConnectFailureThrowsWithinTheDeadline) {
  uint16_t port;
  {
    Fixture f;
    SKIP_WITHOUT_UCX(f);
    port = f.receiver->port();
  }
  UcxKvSender sender(options(1));
  const auto t0 = Clock::now();
  EXPECT_THROW(sender.send("127.0.0.1", port, encode_kv_message(transport_message(1, 8))), Error);
  EXPECT_LT(since(t0), 2.5);
  EXPECT_THROW(sender.send("not an address", port, encode_kv_message(transport_message(1, 8))),
               Error);
}

TEST(UcxTransport, BadListenAddressThrows) {
  EXPECT_THROW(UcxKvReceiver("not-an-ip", 0, options(1), [](KvMessage) { return std::string(); }),
               Error);
}

}  // namespace
}  // namespace strata::disagg

#else  // STRATA_HAVE_UCX

#include <gtest/gtest.h>

TEST(UcxTransport, NotBuilt) {
  GTEST_SKIP() << "UCX transport not built (libucx-dev missing)";
}

#endif  // STRATA_HAVE_UCX
