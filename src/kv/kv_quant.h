// Quantized KV tiles (--kv-type q8_0): what one (block, KV head) tile holds and how a
// token's K or V row is quantized into it. The f32/f16/bf16 layouts are in tile_layout.h.
//
// q8_0: each token's key or value is quantized along head_dim in groups of 32 elements
// with one f16 scale per group (scale = max|x| / 127, q = round(x / scale)), 34 bytes per
// 32 elements as GGUF's Q8_0. A tile is bs * head_dim int8 values, then the f16 scales:
//   keys:   q at key_index(d, slot) (transposed, as f32 keys), scale of (group g, slot)
//           at g * block_size + slot, so one row d of 16 keys has a vector of 16 scales;
//   values: q at value_index(slot, d) (row-major), scale at slot * (head_dim / 32) + g,
//           so 16 consecutive dimensions of one value share one scale.
// Attention dequantizes a fold's tiles (<= kMaxFoldBlocks blocks) into per-thread f32
// scratch in the f32 tile layout and folds those (attention/kv_dequant.h); there is no
// dequantized copy of the cache. Needs head_dim % 16 == 0 (group_size).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/fp16.h"
#include "kv/tile_layout.h"

namespace strata::kv_quant {

// Elements per scale: 32 (as GGUF's Q8_0), or 16 for a head_dim that is a multiple of 16
// only (the tiny models' 16); 0 where neither divides head_dim (not supported).
inline int64_t group_size(int64_t head_dim) {
  return head_dim % 32 == 0 ? 32 : head_dim % 16 == 0 ? 16 : 0;
}

inline bool quantized(DType t) {
  return t == DType::Q8_0;
}

// Bytes one token's K (or V) row of one KV head takes in a tile of type t.
inline size_t row_bytes(DType t, int64_t head_dim) {
  const auto hd = static_cast<size_t>(head_dim);
  if (t == DType::Q8_0) {
    // An unsupported head_dim (group 0) is rejected by KvCache; size it as one group.
    const int64_t g = group_size(head_dim);
    return hd + (g > 0 ? hd / static_cast<size_t>(g) : 1) * 2;
  }
  return hd * dtype_info(t).type_size;
}

// Offset of the f16 scale area in a q8_0 tile.
inline size_t q8_scale_offset(int64_t block_size, int64_t head_dim) {
  return static_cast<size_t>(block_size * head_dim);
}

// Quantizes one slot's key (keys = true) or value into a q8_0 tile.
inline void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs,
                       int64_t hd) {
  auto* q = reinterpret_cast<int8_t*>(tile);
  auto* scales = reinterpret_cast<uint16_t*>(tile + q8_scale_offset(bs, hd));
  const int64_t kGroup = group_size(hd);
  const int64_t n_groups = hd / kGroup;
  for (int64_t g = 0; g < n_groups; ++g) {
    float amax = 0.0f;
    for (int64_t i = 0; i < kGroup; ++i) amax = std::fmax(amax, std::fabs(src[g * kGroup + i]));
    // The stored (f16-rounded) scale is the one the values are divided by, so the
    // dequantized value is q * the scale attention reads.
    const uint16_t sh = fp32_to_fp16(amax / 127.0f);
    const float s = fp16_to_fp32(sh);
    const float inv = s > 0.0f ? 1.0f / s : 0.0f;
    for (int64_t i = 0; i < kGroup; ++i) {
      const int64_t d = g * kGroup + i;
      float r = std::nearbyint(src[d] * inv);
      r = std::fmin(127.0f, std::fmax(-127.0f, r));
      const int64_t at =
          keys ? kv_layout::key_index(d, slot, bs) : kv_layout::value_index(slot, d, hd);
      q[at] = static_cast<int8_t>(r);
    }
    scales[keys ? g * bs + slot : slot * n_groups + g] = sh;
  }
}

}  // namespace strata::kv_quant
