// The same cases over every transport this build has, through the kv_transport.h seam:
// intact delivery, rejections reaching the sender with the receiver still serving, and a
// connection failure; and the factory's refusals.

#include "disagg/kv_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "disagg/transport_message.h"

namespace strata::disagg {
namespace {

using testing::transport_message;

class KvTransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto kinds = kv_transport_kinds();
    if (std::find(kinds.begin(), kinds.end(), GetParam()) == kinds.end())
      GTEST_SKIP() << GetParam() << " transport not built";
    o_.io_timeout_s = 2;
    try {
      receiver_ = make_kv_receiver(GetParam(), "127.0.0.1", 0, o_, [this](KvMessage m) {
        check_block_keys(m, 7, 1u << 20);
        std::lock_guard lock(mu_);
        got_.push_back(std::move(m));
        return std::string("imported");
      });
      sender_ = make_kv_sender(GetParam(), o_);
    } catch (const Error& e) {
      GTEST_SKIP() << GetParam() << " transport cannot start here: " << e.what();
    }
  }
  std::string send(std::span<const uint8_t> bytes) {
    return sender_->send("127.0.0.1", receiver_->port(), bytes);
  }

  KvTransportOptions o_;
  std::mutex mu_;
  std::vector<KvMessage> got_;
  std::unique_ptr<KvReceiver> receiver_;
  std::unique_ptr<KvSender> sender_;
};

TEST_P(KvTransportTest, MessageArrivesIntact) {
  const KvMessage m = transport_message(9, 4096);
  EXPECT_EQ(send(encode_kv_message(m)), "imported");
  std::lock_guard lock(mu_);
  ASSERT_EQ(got_.size(), 1u);
  EXPECT_EQ(got_[0].payload, m.payload);
  EXPECT_EQ(got_[0].keys, m.keys);
  EXPECT_EQ(got_[0].tokens, m.tokens);
}

TEST_P(KvTransportTest, RejectionsReachTheSenderAndTheReceiverKeepsServing) {
  EXPECT_THROW(send(encode_kv_message(transport_message(2, 64, 8))), Error);  // wrong model
  auto corrupt = encode_kv_message(transport_message(2, 64));
  corrupt[60] ^= 1;
  try {
    send(corrupt);
    FAIL() << "corrupt message accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  EXPECT_THROW(send(std::vector<uint8_t>(100, 0xab)), Error);
  EXPECT_EQ(send(encode_kv_message(transport_message(1, 64))), "imported");
  EXPECT_EQ(receiver_->rejected(), 3u);
}

TEST_P(KvTransportTest, ConnectFailureThrows) {
  const uint16_t port = receiver_->port();
  receiver_.reset();
  EXPECT_THROW(sender_->send("127.0.0.1", port, encode_kv_message(transport_message(1, 8))), Error);
}

INSTANTIATE_TEST_SUITE_P(Transports, KvTransportTest, ::testing::Values("tcp", "ucx"),
                         [](const auto& info) { return info.param; });

TEST(KvTransportFactory, RefusesUnknownKindsAndMisplacedOptions) {
  EXPECT_THROW(make_kv_sender("carrier-pigeon", {}), Error);
  const auto kinds = kv_transport_kinds();
  if (std::find(kinds.begin(), kinds.end(), "ucx") == kinds.end()) {
    try {
      make_kv_sender("ucx", {});
      FAIL() << "ucx sender made without UCX";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ucx transport not built"), std::string::npos);
    }
  } else {
    KvTransportOptions o;
    o.rate_limit_bytes_per_s = 1e6;
    EXPECT_THROW(make_kv_sender("ucx", o), Error);
  }
}

}  // namespace
}  // namespace strata::disagg
