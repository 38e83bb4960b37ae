// Content keys of full KV blocks for prefix caching: a block's key chains its parent's
// key, its token ids, the request's cache salt and the model's identity, so equal keys
// mean equal prefixes of the same model under the same salt.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace strata {

struct BlockKey {
  uint64_t lo = 0, hi = 0;  // 128-bit XXH3
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const { return static_cast<size_t>(k.lo ^ (k.hi * 31)); }
};

// Key of a full block given its parent's key (nullopt for the first block).
BlockKey chain_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                         const std::string& salt, uint64_t model_id);

}  // namespace strata
