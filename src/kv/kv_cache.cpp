#include "kv/kv_cache.h"

#include <algorithm>
#include <string>

#include "core/checked.h"
#include "core/error.h"
#include "kv/kv_quant.h"

namespace strata {

KvCache::KvCache(const KvCacheConfig& config) : config_(config) {
  if (config.dtype != DType::F32 && config.dtype != DType::F16 && config.dtype != DType::BF16 &&
      !kv_quant::quantized(config.dtype)) {
    throw Error("kv cache: unsupported element type '" + std::string(dtype_name(config.dtype)) +
                "' (use f32, f16, bf16, q8_0 or q4_0)");
  }
  if (config.n_layers <= 0 || config.n_kv_heads <= 0 || config.head_dim <= 0 ||
      config.block_size <= 0 || config.n_blocks <= 0) {
    throw Error("kv cache: every dimension must be positive");
  }
  if (config.dtype == DType::BF16 && (config.head_dim % 2 != 0 || config.block_size % 2 != 0)) {
    throw Error("kv cache: bf16 tiles pair elements (kv/tile_layout.h), so head_dim (" +
                std::to_string(config.head_dim) + ") and block_size (" +
                std::to_string(config.block_size) +
                ") must be even; use an f16 cache (--kv-type f16)");
  }
  if (kv_quant::quantized(config.dtype)) {
    if (config.latent) {
      throw Error("kv cache: a latent (MLA) cache is f32, f16 or bf16 only; '" +
                  std::string(dtype_name(config.dtype)) + "' is not supported for MLA models");
    }
    if (kv_quant::group_size(config.head_dim) == 0) {
      throw Error("kv cache: a " + std::string(dtype_name(config.dtype)) +
                  " cache quantizes head_dim in groups of 32 (or 16), so head_dim (" +
                  std::to_string(config.head_dim) + ") must be a multiple of 16");
    }
    if (config.dtype == DType::Q4_0 && config.block_size % 2 != 0) {
      throw Error("kv cache: q4_0 tiles pack two keys to a byte, so block_size (" +
                  std::to_string(config.block_size) + ") must be even");
    }
  }
  // Quantized tiles hold int8 elements or nibbles (plus their scales, counted in
  // tile_bytes_); element_size() is 1 for both.
  element_size_ = kv_quant::quantized(config.dtype) ? 1 : dtype_info(config.dtype).type_size;
  tile_elems_ = config.block_size * config.head_dim;
  tile_bytes_ =
      static_cast<size_t>(config.block_size) * kv_quant::row_bytes(config.dtype, config.head_dim);
  const HeadModes& m = config.modes;
  if (!m.dense()) {
    if (m.n_layers != config.n_layers || m.n_kv_heads != config.n_kv_heads ||
        static_cast<int64_t>(m.streaming.size()) != config.n_layers * config.n_kv_heads) {
      throw Error("kv cache: head modes do not match the model's layers and KV heads");
    }
    if (config.n_stream_blocks <= 0 && m.n_streaming() > 0) {
      throw Error("kv cache: streaming heads need a stream pool (n_stream_blocks > 0)");
    }
  }
  if (config.latent && (!m.dense() || config.n_kv_heads != 1)) {
    throw Error("kv cache: a latent (MLA) cache has one row per layer and dense modes");
  }
  const int64_t n_blocks[2] = {config.n_blocks, config.n_stream_blocks};
  head_index_.resize(static_cast<size_t>(config.n_layers * config.n_kv_heads));
  for (int p = 0; p < 2; ++p) {
    layer_heads_[p].assign(static_cast<size_t>(config.n_layers), 0);
    layer_base_[p].assign(static_cast<size_t>(config.n_layers), 0);
  }
  int64_t tiles[2] = {0, 0};
  for (int64_t l = 0; l < config.n_layers; ++l) {
    for (int64_t h = 0; h < config.n_kv_heads; ++h) {
      const int p = pool(l, h);
      head_index_[static_cast<size_t>(l * config.n_kv_heads + h)] =
          layer_heads_[p][static_cast<size_t>(l)]++;
    }
    for (int p = 0; p < 2; ++p) {
      layer_base_[p][static_cast<size_t>(l)] = tiles[p];
      auto t = checked_mul(static_cast<uint64_t>(n_blocks[p]),
                           static_cast<uint64_t>(layer_heads_[p][static_cast<size_t>(l)]));
      if (t) t = checked_add(*t, static_cast<uint64_t>(tiles[p]));
      if (!t || *t > (uint64_t{1} << 40)) throw Error("kv cache: size overflows");
      tiles[p] = static_cast<int64_t>(*t);
    }
  }
  for (int p = 0; p < 2; ++p) {
    auto bytes = checked_mul(static_cast<uint64_t>(tiles[p]), static_cast<uint64_t>(tile_bytes_));
    if (!bytes || *bytes > (uint64_t{1} << 46)) throw Error("kv cache: size overflows");
    // Zero-initialised so a read of a never-written slot is deterministic (it is masked
    // anyway); on huge pages, since attention reads it one 4 KiB tile at a time from all
    // over the pool.
    k_[p] = HugePageBuffer(static_cast<size_t>(*bytes));
    if (!config.latent) v_[p] = HugePageBuffer(static_cast<size_t>(*bytes));
  }
}

void KvCache::populate(int64_t n_blocks) {
  for (int64_t l = 0; l < config_.n_layers; ++l) {
    for (int64_t h = 0; h < config_.n_kv_heads; ++h) {
      const int p = pool(l, h);
      const int64_t held = pool_blocks(l, h);
      const auto bytes =
          static_cast<size_t>(n_blocks < 0 ? held : std::min(n_blocks, held)) * tile_bytes_;
      k_[p].populate(offset(l, 0, h), bytes);
      if (!config_.latent) v_[p].populate(offset(l, 0, h), bytes);
    }
  }
}

size_t KvCache::bytes_per_token() const {
  const int64_t parts = config_.latent ? 1 : 2;
  return static_cast<size_t>(parts * config_.n_layers * config_.n_kv_heads) *
         kv_quant::row_bytes(config_.dtype, config_.head_dim);
}

size_t KvCache::pool_bytes_per_token(int p) const {
  int64_t heads = 0;
  for (int64_t l = 0; l < config_.n_layers; ++l) heads += layer_heads_[p][static_cast<size_t>(l)];
  const int64_t parts = config_.latent ? 1 : 2;
  return static_cast<size_t>(parts * heads) * kv_quant::row_bytes(config_.dtype, config_.head_dim);
}

}  // namespace strata
