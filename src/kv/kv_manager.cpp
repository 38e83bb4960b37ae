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

KvManager::BlockSet::BlockSet(int32_t n_blocks) {
  blocks_.resize(static_cast<size_t>(n_blocks));
  free_.reserve(blocks_.size());
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int32_t> KvManager::BlockSet::take() {
  int32_t b = -1;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    evict(b);
  } else {
    return std::nullopt;
  }
  blocks_[static_cast<size_t>(b)].ref_count = 1;
  return b;
}

int32_t KvManager::BlockSet::find(const BlockKey& key, std::span<const int32_t> tokens) const {
  const auto it = cached_.find(key);
  if (it == cached_.end()) return -1;
  const Block& b = blocks_[static_cast<size_t>(it->second)];
  if (!std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) return -1;
  return it->second;
}

void KvManager::BlockSet::acquire(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.in_lru) {
    lru_.erase(b.lru_pos);
    b.in_lru = false;
  }
  ++b.ref_count;
}

void KvManager::BlockSet::release(int32_t block) {
  Block& b = blocks_[static_cast<size_t>(block)];
  if (b.ref_count <= 0) throw Error("kv manager: double free of block " + std::to_string(block));
  if (--b.ref_count > 0) return;
  if (b.key) {
    b.lru_pos = lru_.insert(lru_.end(), block);
    b.in_lru = true;
  } else {
    free_.push_back(block);
  }
}

void KvManager::BlockSet::register_block(int32_t block, const BlockKey& key,
                                         std::span<const int32_t> tokens) {
  Block& b = blocks_[static_cast<size_t>(block)];
  // Another sequence may have registered the same content first; keep that entry and
  // leave this block unregistered (it is freed normally when this sequence ends).
  if (cached_.count(key) != 0 || b.key) return;
  b.key = key;
  b.tokens.assign(tokens.begin(), tokens.end());
  cached_.emplace(key, block);
}

void KvManager::BlockSet::evict(int32_t block) {
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

KvUsage KvManager::BlockSet::usage() const {
  KvUsage u;
  u.n_blocks = static_cast<int32_t>(blocks_.size());
  u.cached = static_cast<int32_t>(lru_.size());
  u.free = static_cast<int32_t>(free_.size());
  u.used = u.n_blocks - u.cached - u.free;
  return u;
}

void KvManager::BlockSet::clear_cache() {
  while (!lru_.empty()) {
    const int32_t b = lru_.front();
    evict(b);
    free_.push_back(b);
  }
}

KvManager::KvManager(const KvManagerConfig& config)
    : config_(config), full_(config.n_blocks), stream_(std::max(0, config.n_stream_blocks)) {
  if (config.n_blocks <= 0) throw Error("kv manager: n_blocks must be positive");
  if (config.block_size <= 0) throw Error("kv manager: block_size must be positive");
  if (config.n_stream_blocks < 0) throw Error("kv manager: n_stream_blocks must be >= 0");
  if (sparse() && (config.sink < 0 || config.window < 1)) {
    throw Error("kv manager: sparse attention needs sink >= 0 and window >= 1");
  }
}

int64_t KvManager::sink_blocks() const {
  return (config_.sink + config_.block_size - 1) / config_.block_size;
}

int64_t KvManager::window_first_block(int64_t pos) const {
  return std::max<int64_t>(0, pos + 1 - config_.window) / config_.block_size;
}

int32_t KvManager::match_prefix(SequenceKv& seq, std::span<const int32_t> tokens) {
  if (!seq.block_table.empty() || !seq.stream_table.empty()) {
    throw Error("kv manager: match_prefix on a non-empty sequence");
  }
  if (!config_.prefix_cache || tokens.empty()) return 0;
  const auto bs = static_cast<size_t>(config_.block_size);
  // The last token is always computed, so only blocks ending before it can be reused.
  const size_t max_blocks = (tokens.size() - 1) / bs;
  prefix_queries_ += static_cast<int64_t>(tokens.size());
  std::vector<BlockKey> keys;
  std::vector<int32_t> ids;
  std::optional<BlockKey> parent;
  for (size_t i = 0; i < max_blocks; ++i) {
    const BlockKey key = chain_block_key(parent, tokens.subspan(i * bs, bs), seq.salt, config_.model_id);
    const int32_t id = full_.find(key, tokens.subspan(i * bs, bs));
    if (id < 0) break;
    keys.push_back(key);
    ids.push_back(id);
    parent = key;
  }
  size_t k = ids.size();
  // Sparse: the streaming heads must find their sinks and last window cached too.
  std::vector<int32_t> stream_ids;
  for (; sparse() && k > 0; --k) {
    stream_ids.assign(k, -1);
    const auto first_window = static_cast<size_t>(window_first_block(static_cast<int64_t>(k * bs)));
    const auto n_sinks = static_cast<size_t>(sink_blocks());
    bool ok = true;
    for (size_t i = 0; i < k && ok; ++i) {
      if (i >= n_sinks && i < first_window) continue;
      stream_ids[i] = stream_.find(keys[i], tokens.subspan(i * bs, bs));
      ok = stream_ids[i] >= 0;
    }
    if (ok) break;
  }
  for (size_t i = 0; i < k; ++i) {
    full_.acquire(ids[i]);
    seq.block_table.push_back(ids[i]);
    seq.block_keys.push_back(keys[i]);
  }
  if (sparse() && k > 0) {
    seq.stream_table = stream_ids;
    for (int32_t id : stream_ids) {
      if (id >= 0) stream_.acquire(id);
    }
    seq.stream_registered = k;
    seq.stream_released = static_cast<size_t>(window_first_block(static_cast<int64_t>(k * bs)));
  }
  const auto hit = static_cast<int32_t>(k * bs);
  prefix_hits_ += hit;
  return hit;
}

int32_t KvManager::blocks_needed(const SequenceKv& seq, int64_t n_tokens) const {
  const int64_t need = (n_tokens + config_.block_size - 1) / config_.block_size;
  return static_cast<int32_t>(std::max<int64_t>(0, need - static_cast<int64_t>(seq.block_table.size())));
}

int32_t KvManager::stream_blocks_needed(const SequenceKv& seq, int64_t n_tokens) const {
  if (!sparse()) return 0;
  const int64_t need = (n_tokens + config_.block_size - 1) / config_.block_size;
  return static_cast<int32_t>(std::max<int64_t>(0, need - static_cast<int64_t>(seq.stream_table.size())));
}

bool KvManager::allocate(SequenceKv& seq, int64_t n_tokens) {
  const int32_t need = blocks_needed(seq, n_tokens);
  const int32_t need_stream = stream_blocks_needed(seq, n_tokens);
  if (need > full_.n_available() || need_stream > stream_.n_available()) return false;
  for (int32_t i = 0; i < need; ++i) seq.block_table.push_back(*full_.take());
  for (int32_t i = 0; i < need_stream; ++i) seq.stream_table.push_back(*stream_.take());
  return true;
}

void KvManager::commit(SequenceKv& seq, std::span<const int32_t> tokens) {
  const auto bs = static_cast<size_t>(config_.block_size);
  if (config_.prefix_cache) {
    const size_t full = std::min(tokens.size() / bs, seq.block_table.size());
    for (size_t i = seq.block_keys.size(); i < full; ++i) {
      const std::optional<BlockKey> parent =
          i == 0 ? std::nullopt : std::optional<BlockKey>(seq.block_keys[i - 1]);
      const auto block_tokens = tokens.subspan(i * bs, bs);
      const BlockKey key = chain_block_key(parent, block_tokens, seq.salt, config_.model_id);
      seq.block_keys.push_back(key);
      full_.register_block(seq.block_table[i], key, block_tokens);
    }
    const size_t stream_full = std::min(full, seq.stream_table.size());
    for (size_t i = seq.stream_registered; i < stream_full; ++i) {
      const int32_t id = seq.stream_table[i];
      if (id >= 0) stream_.register_block(id, seq.block_keys[i], tokens.subspan(i * bs, bs));
    }
    seq.stream_registered = std::max(seq.stream_registered, stream_full);
  }
  release_out_of_window(seq, static_cast<int64_t>(tokens.size()));
}

void KvManager::release_out_of_window(SequenceKv& seq, int64_t n_computed) {
  if (!sparse()) return;
  // Blocks wholly before the next position's window, past the sinks, are not read again.
  const auto first_window =
      std::min(static_cast<size_t>(window_first_block(n_computed)), seq.stream_table.size());
  for (size_t i = std::max(seq.stream_released, static_cast<size_t>(sink_blocks())); i < first_window; ++i) {
    release_stream(seq, i);
  }
  seq.stream_released = std::max(seq.stream_released, first_window);
}

void KvManager::release_stream(SequenceKv& seq, size_t index) {
  int32_t& id = seq.stream_table[index];
  if (id < 0) return;
  stream_.release(id);
  id = -1;
}

void KvManager::free(SequenceKv& seq) {
  for (auto it = seq.block_table.rbegin(); it != seq.block_table.rend(); ++it) full_.release(*it);
  for (size_t i = seq.stream_table.size(); i-- > 0;) release_stream(seq, i);
  seq.block_table.clear();
  seq.block_keys.clear();
  seq.stream_table.clear();
  seq.stream_registered = 0;
  seq.stream_released = 0;
}

}  // namespace strata
