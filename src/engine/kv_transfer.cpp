// EngineCore's seam for prefill/decode disaggregation (docs/DISAGGREGATION.md): whole
// prefix blocks of the paged pool out of one engine (export) and into another (import),
// through the KV message of disagg/kv_format.h. A block's bytes for one layer are its
// K tiles of every KV head in head order, then its V tiles (none for a latent cache),
// exactly as KvCache lays each (block, head) tile out.
#include <cstring>
#include <string>

#include "core/error.h"
#include "engine/engine_core.h"

namespace strata {
namespace {

void refuse_unshippable(const EngineConfig& config, const char* what) {
  if (config.head_modes.n_streaming() > 0) {
    throw Error(std::string(what) +
                ": the KV cache has streaming (sparse) heads, whose ring rows are not "
                "prefix blocks and cannot be shipped; recompute the prompt instead");
  }
  if (!config.prefix_cache) {
    throw Error(std::string(what) + ": the prefix cache is off (--no-prefix-cache)");
  }
}

}  // namespace

std::vector<disagg::KvLayerLayout> EngineCore::kv_layer_layout() const {
  const KvCacheConfig& c = runner_.cache().config();
  const auto tile = static_cast<uint32_t>(runner_.cache().tile_bytes());
  const auto heads = static_cast<uint32_t>(c.n_kv_heads);
  disagg::KvLayerLayout l;
  l.dtype = static_cast<uint32_t>(c.dtype);
  l.k_bytes = heads * tile;
  l.v_bytes = c.latent ? 0 : heads * tile;
  return std::vector<disagg::KvLayerLayout>(static_cast<size_t>(c.n_layers), l);
}

uint64_t EngineCore::kv_block_bytes() const {
  uint64_t n = 0;
  for (const auto& l : kv_layer_layout()) n += uint64_t{l.k_bytes} + l.v_bytes;
  return n;
}

disagg::KvMessage EngineCore::export_prompt_blocks(std::span<const int32_t> tokens,
                                                   const std::string& salt) const {
  refuse_unshippable(config_, "kv export");
  disagg::KvMessage m;
  m.model_fingerprint = model_fingerprint();
  m.block_size = static_cast<uint32_t>(config_.block_size);
  m.layers = kv_layer_layout();
  m.salt = salt;
  const auto bs = static_cast<size_t>(config_.block_size);
  std::vector<int32_t> ids;
  for (size_t i = 0; i < tokens.size() / bs; ++i) {
    const auto block_tokens = tokens.subspan(i * bs, bs);
    const BlockKey key =
        chain_block_key(i == 0 ? std::nullopt : std::optional<BlockKey>(m.keys.back()),
                        block_tokens, salt, m.model_fingerprint);
    const int32_t id = kv_.find_block(key, block_tokens);
    if (id < 0) break;
    ids.push_back(id);
    m.keys.push_back(key);
    m.tokens.insert(m.tokens.end(), block_tokens.begin(), block_tokens.end());
  }
  const KvCache& cache = runner_.cache();
  const KvCacheConfig& c = cache.config();
  const size_t tile = cache.tile_bytes();
  m.payload.resize(ids.size() * static_cast<size_t>(m.block_payload_bytes()));
  uint8_t* out = m.payload.data();
  for (const int32_t b : ids) {
    for (int64_t l = 0; l < c.n_layers; ++l) {
      for (int64_t h = 0; h < c.n_kv_heads; ++h, out += tile)
        std::memcpy(out, cache.k_tile(l, b, h), tile);
      if (c.latent) continue;
      for (int64_t h = 0; h < c.n_kv_heads; ++h, out += tile)
        std::memcpy(out, cache.v_tile(l, b, h), tile);
    }
  }
  return m;
}

int64_t EngineCore::held_prefix_blocks(std::span<const int32_t> tokens,
                                       const std::string& salt) const {
  if (config_.head_modes.n_streaming() > 0 || !config_.prefix_cache) return 0;
  const auto bs = static_cast<size_t>(config_.block_size);
  std::optional<BlockKey> parent;
  int64_t n = 0;
  for (size_t i = 0; i < tokens.size() / bs; ++i, ++n) {
    const auto block_tokens = tokens.subspan(i * bs, bs);
    parent = chain_block_key(parent, block_tokens, salt, model_fingerprint());
    if (kv_.find_block(*parent, block_tokens) < 0) break;
  }
  return n;
}

EngineCore::KvImportResult EngineCore::import_blocks(const disagg::KvMessage& m) {
  refuse_unshippable(config_, "kv import");
  if (m.model_fingerprint != model_fingerprint()) {
    throw Error("kv import: the message is from another model (fingerprint " +
                std::to_string(m.model_fingerprint) + ", this engine's " +
                std::to_string(model_fingerprint()) + ")");
  }
  if (m.block_size != static_cast<uint32_t>(config_.block_size)) {
    throw Error("kv import: block size " + std::to_string(m.block_size) + " differs from " +
                std::to_string(config_.block_size));
  }
  if (m.layers != kv_layer_layout()) {
    throw Error(
        "kv import: the layer table (element type, K/V bytes per block) differs from this "
        "cache's (another --kv-type?)");
  }
  const size_t n = m.keys.size();
  const uint64_t per_block = m.block_payload_bytes();
  if (m.tokens.size() != n * m.block_size || m.payload.size() != n * per_block)
    throw Error("kv import: token or payload count does not match the blocks");
  // Keys are recomputed from the tokens, the salt and this engine's model id.
  disagg::check_block_keys(m, model_fingerprint(), static_cast<uint32_t>(model_.config().n_vocab));

  const auto bs = static_cast<size_t>(m.block_size);
  auto block_tokens = [&](size_t i) {
    return std::span<const int32_t>(m.tokens.data() + i * bs, bs);
  };
  // Blocks held already are pinned for the import, so no allocation below evicts a
  // link of the chain; the rest get new blocks, all or none.
  std::vector<int32_t> held(n, -1);
  std::vector<size_t> missing;
  for (size_t i = 0; i < n; ++i) {
    held[i] = kv_.find_block(m.keys[i], block_tokens(i));
    if (held[i] >= 0) {
      kv_.retain_block(held[i]);
    } else {
      missing.push_back(i);
    }
  }
  auto unpin = [&] {
    for (size_t i = n; i-- > 0;) {
      if (held[i] >= 0) kv_.release_block(held[i]);
    }
  };
  const std::vector<int32_t> ids = kv_.allocate_blocks(static_cast<int32_t>(missing.size()));
  if (ids.size() != missing.size()) {
    const int32_t available = kv_.n_available();
    unpin();
    throw Error("kv import: needs " + std::to_string(missing.size()) + " blocks, " +
                std::to_string(available) + " available; nothing imported");
  }
  KvCache& cache = runner_.cache();
  const KvCacheConfig& c = cache.config();
  const size_t tile = cache.tile_bytes();
  for (size_t k = 0; k < missing.size(); ++k) {
    const size_t i = missing[k];
    const int32_t b = ids[k];
    const uint8_t* in = m.payload.data() + i * per_block;
    for (int64_t l = 0; l < c.n_layers; ++l) {
      for (int64_t h = 0; h < c.n_kv_heads; ++h, in += tile)
        std::memcpy(cache.k_tile(l, b, h), in, tile);
      if (c.latent) continue;
      for (int64_t h = 0; h < c.n_kv_heads; ++h, in += tile)
        std::memcpy(cache.v_tile(l, b, h), in, tile);
    }
    kv_.register_block(b, m.keys[i], block_tokens(i));
  }
  // Unreferenced from here: cached, the tail first in eviction order.
  for (size_t k = ids.size(); k-- > 0;) kv_.release_block(ids[k]);
  unpin();
  return {static_cast<int32_t>(ids.size()), static_cast<int32_t>(n - ids.size())};
}

}  // namespace strata
