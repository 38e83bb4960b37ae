#include "kv/kv_cache.h"

#include <string>

#include "core/checked.h"
#include "core/error.h"

namespace strata {

KvCache::KvCache(const KvCacheConfig& config) : config_(config) {
  if (config.dtype != DType::F32 && config.dtype != DType::F16) {
    throw Error("kv cache: unsupported element type '" + std::string(dtype_name(config.dtype)) +
                "' (use f32 or f16)");
  }
  if (config.n_layers <= 0 || config.n_kv_heads <= 0 || config.head_dim <= 0 ||
      config.block_size <= 0 || config.n_blocks <= 0) {
    throw Error("kv cache: every dimension must be positive");
  }
  element_size_ = dtype_info(config.dtype).type_size;
  tile_elems_ = config.block_size * config.head_dim;
  auto bytes = checked_mul(static_cast<uint64_t>(config.n_layers), config.n_blocks);
  if (bytes) bytes = checked_mul(*bytes, config.n_kv_heads);
  if (bytes) bytes = checked_mul(*bytes, tile_elems_);
  if (bytes) bytes = checked_mul(*bytes, element_size_);
  if (!bytes || *bytes > (uint64_t{1} << 46)) throw Error("kv cache: size overflows");
  // Zero-initialised so a read of a never-written slot is deterministic (it is masked anyway).
  k_.assign(*bytes, 0);
  v_.assign(*bytes, 0);
}

size_t KvCache::bytes_per_token() const {
  return static_cast<size_t>(2 * config_.n_layers * config_.n_kv_heads * config_.head_dim) *
         element_size_;
}

}  // namespace strata
