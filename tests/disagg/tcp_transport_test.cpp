// The TCP transport over loopback: messages arrive intact, a rejection reaches the
// sender, a stalled or garbage-sending peer is dropped and the receiver keeps serving,
// and the rate limit paces the send.

#include "disagg/tcp_transport.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <chrono>
#include <mutex>

#include "core/error.h"

namespace strata::disagg {
namespace {

KvMessage message_of(size_t payload_blocks, uint32_t layer_bytes) {
  KvMessage m;
  m.model_fingerprint = 7;
  m.block_size = 2;
  m.layers = {{1, layer_bytes, layer_bytes}};
  std::optional<BlockKey> parent;
  for (size_t b = 0; b < payload_blocks; ++b) {
    m.tokens.push_back(static_cast<int32_t>(b));
    m.tokens.push_back(static_cast<int32_t>(b + 1));
    parent =
        chain_block_key(parent, std::span<const int32_t>(m.tokens).subspan(b * 2, 2), m.salt, 7);
    m.keys.push_back(*parent);
  }
  m.payload.resize(payload_blocks * m.block_payload_bytes());
  for (size_t i = 0; i < m.payload.size(); ++i) m.payload[i] = static_cast<uint8_t>(i);
  return m;
}

struct Fixture {
  TcpTransportOptions options;
  std::mutex mu;
  std::vector<KvMessage> got;
  std::unique_ptr<TcpKvReceiver> receiver;
  explicit Fixture(double timeout_s = 2) {
    options.io_timeout_s = timeout_s;
    receiver = std::make_unique<TcpKvReceiver>("127.0.0.1", 0, options, [this](KvMessage m) {
      if (m.model_fingerprint != 7) throw Error("wrong model fingerprint");
      std::lock_guard lock(mu);
      got.push_back(std::move(m));
      return std::string("imported");
    });
  }
};

TEST(TcpTransport, MessageArrivesIntact) {
  Fixture f;
  const KvMessage m = message_of(5, 256);
  EXPECT_EQ(send_kv_message("127.0.0.1", f.receiver->port(), encode_kv_message(m), f.options),
            "imported");
  std::lock_guard lock(f.mu);
  ASSERT_EQ(f.got.size(), 1u);
  EXPECT_EQ(f.got[0].payload, m.payload);
  EXPECT_EQ(f.got[0].keys, m.keys);
}

TEST(TcpTransport, RejectionsReachTheSenderAndTheReceiverKeepsServing) {
  Fixture f;
  KvMessage wrong = message_of(2, 64);
  wrong.model_fingerprint = 8;
  EXPECT_THROW(
      send_kv_message("127.0.0.1", f.receiver->port(), encode_kv_message(wrong), f.options), Error);
  auto corrupt = encode_kv_message(message_of(2, 64));
  corrupt[60] ^= 1;
  try {
    send_kv_message("127.0.0.1", f.receiver->port(), corrupt, f.options);
    FAIL() << "corrupt message accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  const std::vector<uint8_t> garbage(100, 0xab);
  EXPECT_THROW(send_kv_message("127.0.0.1", f.receiver->port(), garbage, f.options), Error);
  EXPECT_EQ(send_kv_message("127.0.0.1", f.receiver->port(), encode_kv_message(message_of(1, 64)),
                            f.options),
            "imported");
  EXPECT_EQ(f.receiver->rejected(), 3u);
}

TEST(TcpTransport, StalledPeerIsDroppedAfterTheDeadline) {
  Fixture f(0.3);
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), f.receiver->port()});
  const auto bytes = encode_kv_message(message_of(1, 64));
  asio::write(s, asio::buffer(bytes.data(), 10));  // part of the header, then silence
  const auto t0 = std::chrono::steady_clock::now();
  // The next sender waits for the stalled connection's deadline, then is served. Its own
  // deadline is longer than the receiver's: with equal ones the two race.
  TcpTransportOptions patient = f.options;
  patient.io_timeout_s = 1.5;
  EXPECT_EQ(send_kv_message("127.0.0.1", f.receiver->port(), bytes, patient), "imported");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(f.receiver->rejected(), 1u);
}

TEST(TcpTransport, RateLimitPacesTheSend) {
  Fixture f;
  const auto bytes = encode_kv_message(message_of(16, 32 * 1024));  // ~1 MiB
  TcpTransportOptions slow = f.options;
  slow.rate_limit_bytes_per_s = 4.0 * 1024 * 1024;
  const auto t0 = std::chrono::steady_clock::now();
  send_kv_message("127.0.0.1", f.receiver->port(), bytes, slow);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(s, 0.9 * static_cast<double>(bytes.size()) / slow.rate_limit_bytes_per_s);
}

TEST(TcpTransport, ConnectFailureThrows) {
  TcpTransportOptions o;
  o.io_timeout_s = 1;
  uint16_t port;
  {
    Fixture f;
    port = f.receiver->port();
  }
  EXPECT_THROW(send_kv_message("127.0.0.1", port, encode_kv_message(message_of(1, 8)), o), Error);
}

}  // namespace
}  // namespace strata::disagg
