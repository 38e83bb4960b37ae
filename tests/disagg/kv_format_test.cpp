// The KV message format: round trips exactly, and every truncation, random mutation and
// out-of-limit field is rejected with strata::Error, never anything else (run under
// ASan to also catch over-reads).

#include "disagg/kv_format.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/error.h"

namespace strata::disagg {
namespace {

constexpr uint64_t kModel = 0x1234abcdull;

// Three blocks of 4 tokens over two layers (f16-sized K/V and a latent-style layer
// with no V), with chained keys computed as the prefix cache computes them.
KvMessage sample_message(uint32_t n_blocks = 3) {
  KvMessage m;
  m.model_fingerprint = kModel;
  m.block_size = 4;
  m.layers = {{1, 64, 64}, {30, 48, 0}};
  m.salt = "salt";
  std::optional<BlockKey> parent;
  for (uint32_t b = 0; b < n_blocks; ++b) {
    for (int32_t i = 0; i < 4; ++i) m.tokens.push_back(static_cast<int32_t>(b * 4 + i + 1));
    parent = chain_block_key(parent, std::span<const int32_t>(m.tokens).subspan(b * 4, 4), m.salt,
                             kModel);
    m.keys.push_back(*parent);
  }
  m.payload.resize(n_blocks * m.block_payload_bytes());
  for (size_t i = 0; i < m.payload.size(); ++i) m.payload[i] = static_cast<uint8_t>(i * 7 + 3);
  return m;
}

bool rejected(std::span<const uint8_t> bytes, const KvFormatLimits& limits = {}) {
  try {
    decode_kv_message(bytes, limits);
    return false;
  } catch (const Error&) {
    return true;
  }
}

TEST(KvFormat, RoundTripIsExact) {
  const KvMessage m = sample_message();
  const auto bytes = encode_kv_message(m);
  EXPECT_EQ(kv_message_size_from_header(std::span(bytes).first(kKvHeaderBytes)), bytes.size());
  const KvMessage d = decode_kv_message(bytes);
  EXPECT_EQ(d.model_fingerprint, m.model_fingerprint);
  EXPECT_EQ(d.block_size, m.block_size);
  EXPECT_EQ(d.layers, m.layers);
  EXPECT_EQ(d.salt, m.salt);
  EXPECT_EQ(d.keys, m.keys);
  EXPECT_EQ(d.tokens, m.tokens);
  EXPECT_EQ(d.payload, m.payload);
  EXPECT_NO_THROW(check_block_keys(d, kModel, 100));
  EXPECT_EQ(encode_kv_message(d), bytes);
}

TEST(KvFormat, PayloadOffsetsFollowTheLayerTable) {
  const KvMessage m = sample_message();
  EXPECT_EQ(m.block_payload_bytes(), 64u + 64 + 48);
  EXPECT_EQ(m.payload_offset(0, 1), 128u);
  EXPECT_EQ(m.payload_offset(2, 1), 2 * 176u + 128);
}

TEST(KvFormat, ZeroBlocksRoundTrip) {
  const auto bytes = encode_kv_message(sample_message(0));
  EXPECT_TRUE(decode_kv_message(bytes).keys.empty());
}

TEST(KvFormat, WrongModelOrSaltOrTokensFailKeyCheck) {
  KvMessage m = sample_message();
  EXPECT_THROW(check_block_keys(m, kModel + 1, 100), Error);
  EXPECT_THROW(check_block_keys(m, kModel, 5), Error);  // token ids past a 5-token vocabulary
  m.salt = "other";
  EXPECT_THROW(check_block_keys(m, kModel, 100), Error);
  m = sample_message();
  m.tokens[5] = 99;
  EXPECT_THROW(check_block_keys(m, kModel, 100), Error);
}

TEST(KvFormat, InconsistentMessagesAreNotEncoded) {
  KvMessage m = sample_message();
  m.payload.pop_back();
  EXPECT_THROW(encode_kv_message(m), Error);
  m = sample_message();
  m.tokens.pop_back();
  EXPECT_THROW(encode_kv_message(m), Error);
}

TEST(KvFormat, EveryTruncationIsRejected) {
  const auto bytes = encode_kv_message(sample_message());
  for (size_t len = 0; len < bytes.size(); ++len)
    EXPECT_TRUE(rejected(std::span(bytes).first(len))) << "prefix of " << len << " bytes";
}

TEST(KvFormat, LimitsAreEnforced) {
  const auto bytes = encode_kv_message(sample_message());
  KvFormatLimits small;
  small.max_blocks = 2;
  EXPECT_TRUE(rejected(bytes, small));
  small = {};
  small.max_message_bytes = bytes.size() - 1;
  EXPECT_TRUE(rejected(bytes, small));
  EXPECT_THROW(kv_message_size_from_header(std::span(bytes).first(kKvHeaderBytes), small), Error);
  small = {};
  small.max_layer_block_bytes = 63;
  EXPECT_TRUE(rejected(bytes, small));
}

// A header that announces huge counts with a matching total must be refused by the limits
// before anything is allocated from them.
TEST(KvFormat, OversizedCountsAreRejectedBeforeAllocation) {
  auto bytes = encode_kv_message(sample_message());
  const uint32_t huge = 0xffffffffu;
  std::memcpy(bytes.data() + 24, &huge, 4);  // blocks
  EXPECT_TRUE(rejected(bytes));
  bytes = encode_kv_message(sample_message());
  const uint64_t total = ~0ull;
  std::memcpy(bytes.data() + 32, &total, 8);
  EXPECT_TRUE(rejected(bytes));
}

// Each single-byte change anywhere is caught (by a field check or the checksum).
TEST(KvFormat, EverySingleByteFlipIsRejected) {
  const auto bytes = encode_kv_message(sample_message());
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto bad = bytes;
    bad[i] ^= 0x5a;
    EXPECT_TRUE(rejected(bad)) << "byte " << i;
  }
}

TEST(KvFormat, RandomMutationsNeverCrash) {
  const auto base = encode_kv_message(sample_message());
  std::mt19937_64 rng(42);
  for (int iter = 0; iter < 20000; ++iter) {
    auto bytes = base;
    const int n = 1 + static_cast<int>(rng() % 8);
    for (int k = 0; k < n; ++k) {
      switch (rng() % 4) {
        case 0:
          bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
          break;
        case 1:
          bytes.resize(rng() % (bytes.size() + 1));
          break;
        case 2:
          bytes.insert(bytes.begin() + static_cast<ptrdiff_t>(rng() % (bytes.size() + 1)),
                       static_cast<uint8_t>(rng()));
          break;
        default:
          if (bytes.size() >= 4) {
            const uint32_t v = static_cast<uint32_t>(rng());
            std::memcpy(bytes.data() + rng() % (bytes.size() - 3), &v, 4);
          }
      }
      if (bytes.empty()) break;
    }
    try {
      const KvMessage m = decode_kv_message(bytes);
      (void)encode_kv_message(m);  // a message that parses is self-consistent
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace strata::disagg
