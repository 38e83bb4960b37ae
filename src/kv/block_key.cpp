#include "kv/block_key.h"

// The state struct is only visible with static linking enabled; it lets the hash run
// without a heap allocation per block.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

namespace strata {

BlockKey chain_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens,
                         const std::string& salt, uint64_t model_id) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  const uint64_t header[3] = {parent ? parent->lo : 0, parent ? parent->hi : 0, model_id};
  const uint8_t has_parent = parent ? 1 : 0;
  XXH3_128bits_update(&state, header, sizeof header);
  XXH3_128bits_update(&state, &has_parent, 1);
  const uint64_t salt_len = salt.size();
  XXH3_128bits_update(&state, &salt_len, sizeof salt_len);
  XXH3_128bits_update(&state, salt.data(), salt.size());
  XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.low64, h.high64};
}

}  // namespace strata
