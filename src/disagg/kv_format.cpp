#include "disagg/kv_format.h"

#include <xxhash.h>

#include <cstring>
#include <optional>

#include "core/checked.h"
#include "core/error.h"

namespace strata::disagg {
namespace {

constexpr char kMagic[4] = {'S', 'K', 'V', 'B'};

uint64_t need(std::optional<uint64_t> v, const char* what) {
  if (!v) throw Error(std::string("KV message: ") + what + " overflows");
  return *v;
}

// Appends little-endian integers (x86-64 and aarch64 hosts are little-endian).
class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }

 private:
  std::vector<uint8_t>& out_;
};

// Reads fields in order, throwing before any read that would pass the end.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  template <typename T>
  T get(const char* field) {
    T v;
    std::memcpy(&v, take(sizeof(T), field), sizeof(T));
    return v;
  }
  const uint8_t* take(uint64_t n, const char* field) {
    if (n > in_.size() - pos_)
      throw Error(std::string("KV message truncated in field '") + field + "'");
    const uint8_t* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

struct Prefix {
  uint64_t fingerprint;
  uint32_t block_size, n_layers, n_blocks, salt_bytes;
  uint64_t total_bytes;
};

Prefix read_prefix(Reader& r, const KvFormatLimits& limits) {
  const uint8_t* magic = r.take(4, "magic");
  if (std::memcmp(magic, kMagic, 4) != 0)
    throw Error("KV message: bad magic (not a strata KV message)");
  const auto version = r.get<uint16_t>("version");
  if (version != kKvFormatVersion)
    throw Error("KV message: unsupported version " + std::to_string(version) +
                " (this build reads " + std::to_string(kKvFormatVersion) + ")");
  if (r.get<uint16_t>("flags") != 0) throw Error("KV message: field 'flags' must be 0");
  Prefix p{};
  p.fingerprint = r.get<uint64_t>("model_fingerprint");
  p.block_size = r.get<uint32_t>("block_size");
  p.n_layers = r.get<uint32_t>("layers");
  p.n_blocks = r.get<uint32_t>("blocks");
  p.salt_bytes = r.get<uint32_t>("salt_bytes");
  p.total_bytes = r.get<uint64_t>("total_bytes");
  auto check = [](uint64_t v, uint64_t lo, uint64_t hi, const char* field) {
    if (v < lo || v > hi)
      throw Error(std::string("KV message: field '") + field + "' = " + std::to_string(v) +
                  " outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  };
  check(p.block_size, 1, limits.max_block_size, "block_size");
  check(p.n_layers, 1, limits.max_layers, "layers");
  check(p.n_blocks, 0, limits.max_blocks, "blocks");
  check(p.salt_bytes, 0, limits.max_salt_bytes, "salt_bytes");
  check(p.total_bytes, kKvHeaderBytes, limits.max_message_bytes, "total_bytes");
  return p;
}

// Wire bytes of everything but the payload, given the counts.
uint64_t fixed_bytes(uint64_t n_layers, uint64_t salt, uint64_t n_blocks, uint64_t block_size) {
  const uint64_t per_block =
      need(checked_add(16, need(checked_mul(block_size, 4), "tokens")), "block record");
  uint64_t n = kKvHeaderBytes;
  n = need(checked_add(n, need(checked_mul(n_layers, 12), "layer table")), "layer table");
  n = need(checked_add(n, salt), "salt");
  n = need(checked_add(n, need(checked_mul(n_blocks, per_block), "block records")),
           "block records");
  return need(checked_add(n, 8), "trailer");
}

}  // namespace

uint64_t KvMessage::block_payload_bytes() const {
  uint64_t n = 0;
  for (const auto& l : layers)
    n = need(checked_add(n, uint64_t{l.k_bytes} + l.v_bytes), "block payload");
  return n;
}

uint64_t KvMessage::payload_offset(size_t block, size_t layer) const {
  uint64_t off = need(checked_mul(block, block_payload_bytes()), "payload offset");
  for (size_t i = 0; i < layer && i < layers.size(); ++i)
    off += uint64_t{layers[i].k_bytes} + layers[i].v_bytes;
  return off;
}

std::vector<uint8_t> encode_kv_message(const KvMessage& m) {
  const uint64_t n_blocks = m.keys.size();
  if (m.layers.empty()) throw Error("KV message: no layers");
  if (m.block_size == 0) throw Error("KV message: block_size is 0");
  if (m.tokens.size() != n_blocks * m.block_size)
    throw Error("KV message: " + std::to_string(m.tokens.size()) + " tokens for " +
                std::to_string(n_blocks) + " blocks of " + std::to_string(m.block_size));
  const uint64_t payload = need(checked_mul(n_blocks, m.block_payload_bytes()), "payload");
  if (m.payload.size() != payload)
    throw Error("KV message: payload is " + std::to_string(m.payload.size()) +
                " bytes, layout needs " + std::to_string(payload));
  const uint64_t total = need(
      checked_add(fixed_bytes(m.layers.size(), m.salt.size(), n_blocks, m.block_size), payload),
      "message");
  std::vector<uint8_t> out;
  out.reserve(total);
  Writer w(out);
  w.bytes(kMagic, 4);
  w.put<uint16_t>(kKvFormatVersion);
  w.put<uint16_t>(0);
  w.put<uint64_t>(m.model_fingerprint);
  w.put<uint32_t>(m.block_size);
  w.put<uint32_t>(static_cast<uint32_t>(m.layers.size()));
  w.put<uint32_t>(static_cast<uint32_t>(n_blocks));
  w.put<uint32_t>(static_cast<uint32_t>(m.salt.size()));
  w.put<uint64_t>(total);
  for (const auto& l : m.layers) {
    w.put<uint32_t>(l.dtype);
    w.put<uint32_t>(l.k_bytes);
    w.put<uint32_t>(l.v_bytes);
  }
  w.bytes(m.salt.data(), m.salt.size());
  for (size_t b = 0; b < n_blocks; ++b) {
    w.put<uint64_t>(m.keys[b].lo);
    w.put<uint64_t>(m.keys[b].hi);
    w.bytes(m.tokens.data() + b * m.block_size, size_t{m.block_size} * 4);
  }
  w.bytes(m.payload.data(), m.payload.size());
  w.put<uint64_t>(XXH3_64bits(out.data(), out.size()));
  return out;
}

void check_block_keys(const KvMessage& m, uint64_t model_id, uint32_t vocab_size) {
  if (m.tokens.size() != m.keys.size() * m.block_size)
    throw Error("KV message: token count does not match blocks");
  for (int32_t t : m.tokens)
    if (t < 0 || static_cast<uint32_t>(t) >= vocab_size)
      throw Error("KV message: token id " + std::to_string(t) + " outside the vocabulary of " +
                  std::to_string(vocab_size));
  std::optional<BlockKey> parent;
  for (size_t b = 0; b < m.keys.size(); ++b) {
    const std::span<const int32_t> toks(m.tokens.data() + b * m.block_size, m.block_size);
    const BlockKey k = chain_block_key(parent, toks, m.salt, model_id);
    if (!(k == m.keys[b]))
      throw Error("KV message: block " + std::to_string(b) +
                  "'s key does not match its tokens (wrong model or salt)");
    parent = k;
  }
}

uint64_t kv_message_size_from_header(std::span<const uint8_t> header,
                                     const KvFormatLimits& limits) {
  Reader r(header);
  return read_prefix(r, limits).total_bytes;
}

KvMessage decode_kv_message(std::span<const uint8_t> bytes, const KvFormatLimits& limits) {
  Reader r(bytes);
  const Prefix p = read_prefix(r, limits);
  if (p.total_bytes != bytes.size())
    throw Error("KV message: field 'total_bytes' = " + std::to_string(p.total_bytes) + " but " +
                std::to_string(bytes.size()) + " bytes arrived");
  KvMessage m;
  m.model_fingerprint = p.fingerprint;
  m.block_size = p.block_size;
  m.layers.resize(p.n_layers);
  for (auto& l : m.layers) {
    l.dtype = r.get<uint32_t>("layer dtype");
    l.k_bytes = r.get<uint32_t>("layer k_bytes");
    l.v_bytes = r.get<uint32_t>("layer v_bytes");
    if (l.k_bytes == 0 || l.k_bytes > limits.max_layer_block_bytes ||
        l.v_bytes > limits.max_layer_block_bytes)
      throw Error("KV message: layer block sizes " + std::to_string(l.k_bytes) + "/" +
                  std::to_string(l.v_bytes) + " outside [1, " +
                  std::to_string(limits.max_layer_block_bytes) + "]");
  }
  const uint64_t payload = need(checked_mul(p.n_blocks, m.block_payload_bytes()), "payload");
  const uint64_t expect =
      need(checked_add(fixed_bytes(p.n_layers, p.salt_bytes, p.n_blocks, p.block_size), payload),
           "message");
  if (expect != p.total_bytes)
    throw Error("KV message: field 'total_bytes' = " + std::to_string(p.total_bytes) +
                " but the layout needs " + std::to_string(expect));
  // The sizes agree; check the checksum before trusting any content.
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + bytes.size() - 8, 8);
  if (sum != XXH3_64bits(bytes.data(), bytes.size() - 8))
    throw Error("KV message: checksum mismatch");
  const uint8_t* salt = r.take(p.salt_bytes, "salt");
  m.salt.assign(reinterpret_cast<const char*>(salt), p.salt_bytes);
  m.keys.resize(p.n_blocks);
  m.tokens.resize(size_t{p.n_blocks} * p.block_size);
  for (size_t b = 0; b < p.n_blocks; ++b) {
    m.keys[b].lo = r.get<uint64_t>("block key");
    m.keys[b].hi = r.get<uint64_t>("block key");
    std::memcpy(m.tokens.data() + b * p.block_size,
                r.take(uint64_t{p.block_size} * 4, "block tokens"), size_t{p.block_size} * 4);
  }
  const uint8_t* data = r.take(payload, "payload");
  m.payload.assign(data, data + payload);
  return m;
}

}  // namespace strata::disagg
