#include "kv/kv_manager.h"

#include <algorithm>

#include "core/error.h"
#include "kv/full_attention_manager.h"
#include "kv/streaming_manager.h"

namespace strata {

KvManager::KvManager(const KvManagerConfig& config) : config_(config) {
  if (config.n_blocks <= 0) throw Error("kv manager: n_blocks must be positive");
  if (config.block_size <= 0) throw Error("kv manager: block_size must be positive");
  if (config.n_stream_blocks < 0) throw Error("kv manager: n_stream_blocks must be >= 0");
  managers_.push_back(std::make_unique<FullAttentionManager>(config.n_blocks, config.block_size));
  if (config.n_stream_blocks > 0) {
    managers_.push_back(std::make_unique<StreamingManager>(
        config.n_stream_blocks, config.block_size, config.sink, config.window));
  }
}

void KvManager::ensure_tables(SequenceKv& seq) const {
  if (seq.tables.size() < managers_.size()) seq.tables.resize(managers_.size());
}

int32_t KvManager::match_prefix(SequenceKv& seq, std::span<const int32_t> tokens,
                                int64_t max_tokens) {
  for (const auto& t : seq.tables) {
    if (!t.ids.empty()) throw Error("kv manager: match_prefix on a non-empty sequence");
  }
  if (!config_.prefix_cache || tokens.empty()) return 0;
  ensure_tables(seq);
  const auto bs = static_cast<size_t>(config_.block_size);
  // The last token is always computed, so only blocks ending before it can be reused.
  size_t k = (tokens.size() - 1) / bs;
  if (max_tokens < static_cast<int64_t>(k * bs))
    k = static_cast<size_t>(std::max<int64_t>(0, max_tokens)) / bs;
  prefix_queries_ += static_cast<int64_t>(tokens.size());
  keys_.clear();
  for (size_t i = 0; i < k; ++i) {
    keys_.push_back(chain_block_key(i == 0 ? std::nullopt : std::optional<BlockKey>(keys_.back()),
                                    tokens.subspan(i * bs, bs), seq.salt, config_.model_id));
  }
  // Each manager may only shorten the hit; stop when a full round changes nothing.
  for (size_t before = k + 1; before != k;) {
    before = k;
    for (const auto& m : managers_) k = m->find_hit(keys_, tokens, k);
  }
  for (size_t g = 0; g < managers_.size(); ++g)
    managers_[g]->take_hit(seq.tables[g], keys_, tokens, k);
  seq.block_keys.assign(keys_.begin(), keys_.begin() + static_cast<ptrdiff_t>(k));
  const auto hit = static_cast<int32_t>(k * bs);
  prefix_hits_ += hit;
  return hit;
}

int32_t KvManager::blocks_needed(const SequenceKv& seq, int64_t n_tokens) const {
  static const BlockTable kEmpty;
  return managers_[0]->blocks_needed(seq.tables.empty() ? kEmpty : seq.tables[0], n_tokens);
}

bool KvManager::allocate(SequenceKv& seq, int64_t n_tokens) {
  ensure_tables(seq);
  for (size_t g = 0; g < managers_.size(); ++g) {
    if (managers_[g]->blocks_needed(seq.tables[g], n_tokens) > managers_[g]->pool().n_available())
      return false;
  }
  for (size_t g = 0; g < managers_.size(); ++g) managers_[g]->allocate(seq.tables[g], n_tokens);
  return true;
}

void KvManager::commit(SequenceKv& seq, std::span<const int32_t> tokens) {
  ensure_tables(seq);
  if (config_.prefix_cache) {
    const auto bs = static_cast<size_t>(config_.block_size);
    const size_t full = std::min(tokens.size() / bs, seq.tables[0].ids.size());
    for (size_t i = seq.block_keys.size(); i < full; ++i) {
      const auto parent = i == 0 ? std::nullopt : std::optional<BlockKey>(seq.block_keys[i - 1]);
      seq.block_keys.push_back(
          chain_block_key(parent, tokens.subspan(i * bs, bs), seq.salt, config_.model_id));
    }
    for (size_t g = 0; g < managers_.size(); ++g)
      managers_[g]->register_full(seq.tables[g], seq.block_keys, tokens);
  }
  release_out_of_window(seq, static_cast<int64_t>(tokens.size()));
}

void KvManager::release_out_of_window(SequenceKv& seq, int64_t n_computed) {
  ensure_tables(seq);
  for (size_t g = 0; g < managers_.size(); ++g)
    managers_[g]->release_unneeded(seq.tables[g], n_computed);
}

void KvManager::truncate(SequenceKv& seq, int64_t n_tokens) {
  for (size_t g = 0; g < std::min(seq.tables.size(), managers_.size()); ++g)
    managers_[g]->truncate(seq.tables[g], n_tokens);
}

void KvManager::free(SequenceKv& seq) {
  for (size_t g = 0; g < std::min(seq.tables.size(), managers_.size()); ++g)
    managers_[g]->free(seq.tables[g]);
  seq.block_keys.clear();
}

std::vector<int32_t> KvManager::allocate_blocks(int32_t n) {
  std::vector<int32_t> ids;
  BlockPool& pool = managers_[0]->pool();
  if (n <= 0 || n > pool.n_available()) return ids;
  ids.reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const auto id = pool.allocate();
    if (!id) {  // n_available said otherwise; give back what was taken
      for (int32_t b : ids) pool.release(b);
      return {};
    }
    ids.push_back(*id);
  }
  return ids;
}

void KvManager::clear_cache() {
  for (const auto& m : managers_) m->pool().clear_cache();
}

int64_t KvManager::evictions() const {
  int64_t n = 0;
  for (const auto& m : managers_) n += m->pool().evictions();
  return n;
}

}  // namespace strata
