// The KV formatter of prefill/decode disaggregation: the wire form of a run of full KV
// blocks, separate from whichever transport carries it (docs/DISAGGREGATION.md).
//
// A message is little-endian:
//   header   magic "SKVB", u16 version, u16 flags (0), u64 model fingerprint,
//            u32 block size (tokens), u32 layers, u32 blocks, u32 salt bytes,
//            u64 total message bytes (so a transport bounds its read from the prefix)
//   layers   per layer: u32 element type (a core DType id), u32 K bytes, u32 V bytes
//            per block, as the cache lays one block of that layer out
//   salt     the request's cache salt
//   blocks   per block: its chained prefix key (2 x u64) and its block-size token ids
//   payload  per block, per layer: the K bytes then the V bytes, copied as laid out
//   trailer  u64 XXH3-64 of everything before it
// The payload is opaque bytes described by the layer table, so a new cache element type
// (a quantized KV block) needs no format change. MLA's latent rows are a layer with V
// bytes 0. Streaming (sparse) heads' ring rows are not prefix blocks and are never
// shipped: an exporter with streaming heads must refuse (see DISAGGREGATION.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kv/block_key.h"

namespace strata::disagg {

// 2: q8_0 and q4_0 key tiles hold dimension quads (kv/tile_layout.h quad_key_index), which
// a version-1 peer would read as transposed keys.
inline constexpr uint16_t kKvFormatVersion = 2;

struct KvLayerLayout {
  uint32_t dtype = 0;    // core DType id of the elements (f32, f16, bf16, or a KV quant type)
  uint32_t k_bytes = 0;  // bytes of one block's K for this layer
  uint32_t v_bytes = 0;  // bytes of one block's V (0 for latent rows)
  bool operator==(const KvLayerLayout&) const = default;
};

// What a receiver accepts; every size a peer sends is checked against these before use.
struct KvFormatLimits {
  uint32_t max_layers = 1024;
  uint32_t max_blocks = 65536;
  uint32_t max_block_size = 1024;
  uint32_t max_salt_bytes = 4096;
  uint32_t max_layer_block_bytes = 64u << 20;
  uint64_t max_message_bytes = 8ull << 30;
};

struct KvMessage {
  uint64_t model_fingerprint = 0;
  uint32_t block_size = 0;
  std::vector<KvLayerLayout> layers;
  std::string salt;
  std::vector<BlockKey> keys;    // one per block, chained from the first
  std::vector<int32_t> tokens;   // keys.size() * block_size
  std::vector<uint8_t> payload;  // keys.size() * block_payload_bytes()

  // Bytes of one block across all layers (K then V per layer).
  uint64_t block_payload_bytes() const;
  // Offset in `payload` of block `block`'s K bytes of layer `layer`.
  uint64_t payload_offset(size_t block, size_t layer) const;
};

// The message's wire bytes. Throws strata::Error if its fields are inconsistent.
std::vector<uint8_t> encode_kv_message(const KvMessage& message);

// Parses and checks wire bytes: every count, size and the checksum, naming the field at
// fault in the strata::Error it throws. Never reads outside `bytes`.
KvMessage decode_kv_message(std::span<const uint8_t> bytes, const KvFormatLimits& limits = {});

// Recomputes each block's chained key from its tokens, the message's salt and the
// receiver's own model id, and throws strata::Error naming the first block whose key
// differs, so a peer cannot register bytes in the prefix cache under a key they do
// not belong to. Also rejects negative token ids and ids >= `vocab_size`.
void check_block_keys(const KvMessage& message, uint64_t model_id, uint32_t vocab_size);

// Bytes of the fixed-size header prefix, which holds the counts that size the rest.
inline constexpr size_t kKvHeaderBytes = 4 + 2 + 2 + 8 + 4 * 4 + 8;

// The total wire size the header prefix announces (checked against `limits`), so a
// transport can bound its read before buffering the message. Throws strata::Error.
uint64_t kv_message_size_from_header(std::span<const uint8_t> header,
                                     const KvFormatLimits& limits = {});

}  // namespace strata::disagg
