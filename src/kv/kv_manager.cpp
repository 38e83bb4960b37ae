#include "kv/kv_manager.h"

// The state struct is only visible with static linking enabled; it lets the hash run
// without a heap allocation per block.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "core/error.h"

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

KvManager::KvManager(const KvManagerConfig& config) : config_(config) {
  if (config.n_blocks <= 0) throw Error("kv manager: n_blocks must be positive");
  if (config.block_size <= 0) throw Error("kv manager: block_size must be positive");
  blocks_.resize(static_cast<size_t>(config.n_blocks));
  free_.reserve(blocks_.size());
  for (int32_t b = config.n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t KvManager::match_prefix(SequenceKv& seq, std::span<const int32_t> tokens) {
  if (!seq.block_table.empty()) throw Error("kv manager: match_prefix on a non-empty sequence");
  if (!config_.prefix_cache || tokens.empty()) return 0;
  const auto bs = static_cast<size_t>(config_.block_size);
  // The last token is always computed, so only blocks ending before it can be reused.
  const size_t max_blocks = (tokens.size() - 1) / bs;
  prefix_queries_ += static_cast<int64_t>(tokens.size());
  std::optional<BlockKey> parent;
  for (size_t i = 0; i < max_blocks; ++i) {
    const auto block_tokens = tokens.subspan(i * bs, bs);
    const BlockKey key = chain_block_key(parent, block_tokens, seq.salt, config_.model_id);
    const auto it = cached_.find(key);
    if (it == cached_.end()) break;
    Block& b = blocks_[static_cast<size_t>(it->second)];
    if (!std::equal(b.tokens.begin(), b.tokens.end(), block_tokens.begin(), block_tokens.end())) break;
    if (b.in_lru) {
      lru_.erase(b.lru_pos);
      b.in_lru = false;
    }
    ++b.ref_count;
    seq.block_table.push_back(it->second);
    seq.block_keys.push_back(key);
    parent = key;
  }
  const auto hit = static_cast<int32_t>(seq.block_table.size() * bs);
  prefix_hits_ += hit;
  return hit;
}

int32_t KvManager::blocks_needed(const SequenceKv& seq, int64_t n_tokens) const {
  const int64_t need = (n_tokens + config_.block_size - 1) / config_.block_size;
  return static_cast<int32_t>(std::max<int64_t>(0, need - static_cast<int64_t>(seq.block_table.size())));
}

std::optional<int32_t> KvManager::take_block() {
  if (!free_.empty()) {
    const int32_t b = free_.back();
    free_.pop_back();
    return b;
  }
  if (!lru_.empty()) {
    const int32_t b = lru_.front();
    evict(b);
    return b;
  }
  return std::nullopt;
}

void KvManager::evict(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.in_lru) {
    lru_.erase(b.lru_pos);
    b.in_lru = false;
  }
  if (b.key) {
    cached_.erase(*b.key);
    b.key.reset();
    b.tokens.clear();
    ++evictions_;
  }
}

bool KvManager::allocate(SequenceKv& seq, int64_t n_tokens) {
  const int32_t need = blocks_needed(seq, n_tokens);
  if (need > n_available()) return false;
  for (int32_t i = 0; i < need; ++i) {
    const int32_t b = *take_block();
    blocks_[static_cast<size_t>(b)].ref_count = 1;
    seq.block_table.push_back(b);
  }
  return true;
}

void KvManager::commit(SequenceKv& seq, std::span<const int32_t> tokens) {
  if (!config_.prefix_cache) return;
  const auto bs = static_cast<size_t>(config_.block_size);
  const size_t full = std::min(tokens.size() / bs, seq.block_table.size());
  for (size_t i = seq.block_keys.size(); i < full; ++i) {
    const std::optional<BlockKey> parent =
        i == 0 ? std::nullopt : std::optional<BlockKey>(seq.block_keys[i - 1]);
    const auto block_tokens = tokens.subspan(i * bs, bs);
    const BlockKey key = chain_block_key(parent, block_tokens, seq.salt, config_.model_id);
    seq.block_keys.push_back(key);
    const int32_t id = seq.block_table[i];
    Block& b = blocks_[static_cast<size_t>(id)];
    // Another sequence may have registered the same content first; keep that entry and
    // leave this block unregistered (it is freed normally when this sequence ends).
    if (cached_.count(key) != 0 || b.key) continue;
    b.key = key;
    b.tokens.assign(block_tokens.begin(), block_tokens.end());
    cached_.emplace(key, id);
  }
}

void KvManager::free(SequenceKv& seq) {
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it) {
    Block& b = blocks_[static_cast<size_t>(*it)];
    if (b.ref_count <= 0) throw Error("kv manager: double free of block " + std::to_string(*it));
    if (--b.ref_count > 0) continue;
    if (b.key) {
      b.lru_pos = lru_.insert(lru_.end(), *it);
      b.in_lru = true;
    } else {
      free_.push_back(*it);
    }
  }
  seq.block_table.clear();
  seq.block_keys.clear();
}

KvUsage KvManager::usage() const {
  KvUsage u;
  u.n_blocks = config_.n_blocks;
  u.cached = static_cast<int32_t>(lru_.size());
  u.free = static_cast<int32_t>(free_.size());
  u.used = u.n_blocks - u.cached - u.free;
  return u;
}

void KvManager::clear_cache() {
  while (!lru_.empty()) {
    const int32_t b = lru_.front();
    evict(b);
    free_.push_back(b);
  }
}

}  // namespace strata
