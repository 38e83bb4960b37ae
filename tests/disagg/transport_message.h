// A KV message with real chained keys and a recognizable payload, for the transport tests.
#pragma once

#include <optional>
#include <span>

#include "disagg/kv_format.h"

namespace strata::disagg::testing {

// `blocks` blocks of one layer with K and V of `layer_bytes` each, under model id 7.
inline KvMessage transport_message(size_t blocks, uint32_t layer_bytes, uint64_t model = 7) {
  KvMessage m;
  m.model_fingerprint = model;
  m.block_size = 2;
  m.layers = {{1, layer_bytes, layer_bytes}};
  std::optional<BlockKey> parent;
  for (size_t b = 0; b < blocks; ++b) {
    m.tokens.push_back(static_cast<int32_t>(b));
    m.tokens.push_back(static_cast<int32_t>(b + 1));
    parent = chain_block_key(parent, std::span<const int32_t>(m.tokens).subspan(b * 2, 2), m.salt,
                             model);
    m.keys.push_back(*parent);
  }
  m.payload.resize(blocks * m.block_payload_bytes());
  for (size_t i = 0; i < m.payload.size(); ++i) m.payload[i] = static_cast<uint8_t>(i * 7 + 3);
  return m;
}

}  // namespace strata::disagg::testing
