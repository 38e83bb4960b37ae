// Quantized KV tiles (--kv-type q8_0, q4_0): what one (block, KV head) tile holds and how
// a token's K or V row is quantized into it. The f32/f16/bf16 layouts are in tile_layout.h.
//
// Both types quantize each token's key or value along head_dim in groups of 32 elements
// (16 where head_dim is a multiple of 16 only) with one f16 scale per group:
//   q8_0: scale = max|x| / 127, q = round(x / scale) in [-127, 127], one int8 per element
//         (34 bytes per 32 elements, as GGUF's Q8_0);
//   q4_0: scale = m / -8 where m is the group's element of largest magnitude (the first
//         one on a tie), q = round(x / scale) clamped to [-8, 7], stored as the nibble
//         q + 8 (18 bytes per 32 elements, as GGUF's Q4_0, which rounds the same way but
//         truncates x / scale + 8.5).
// Dequantized, an element is q * scale, one product rounded once.
// A tile is bs * head_dim elements (int8, or nibbles two to a byte), then the f16 scales:
//   keys:   element (d, slot) at quad_key_index(d, slot) (dimension quads, the int8 dot
//           product's operand: a slot's four dimensions in 4 bytes or 2 bytes of nibbles);
//           scale of (group g, slot) at g * block_size + slot, so one group of 16 keys has
//           a vector of 16 scales;
//   values: element (slot, d) at value_index(slot, d) (row-major), scale at
//           slot * (head_dim / group) + g, so the dimensions of one group share one scale.
// q4_0 element i is the low nibble of byte i / 2 when i is even, the high one when odd:
// dimensions 4m, 4m+1 or 4m+2, 4m+3 of one key (keys), or two adjacent dimensions of one
// value.
// Attention folds the keys as stored, scoring them against the query quantized to int8
// with int8 dot products (attention/tile_kernels.h QueryQ8), and dequantizes the values of
// a fold (<= kMaxFoldBlocks blocks) into per-thread bf16 scratch in the bf16 tile layout
// (attention/kv_dequant.h); there is no dequantized copy of the cache. The write path
// quantizes with the SIMD versions of the store_* references below
// (attention/kv_quantize.h), which give the same bytes. Needs head_dim % 16 == 0
// (group_size), and for q4_0 an even block_size.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/fp16.h"
#include "kv/tile_layout.h"

namespace strata::kv_quant {

// Elements per scale: 32 (as GGUF's Q8_0/Q4_0), or 16 for a head_dim that is a multiple
// of 16 only (the tiny models' 16 and 48); 0 where neither divides head_dim (not
// supported).
inline int64_t group_size(int64_t head_dim) {
  return head_dim % 32 == 0 ? 32 : head_dim % 16 == 0 ? 16 : 0;
}

inline bool quantized(DType t) {
  return t == DType::Q8_0 || t == DType::Q4_0;
}

// Bytes one token's K (or V) row of one KV head takes in a tile of type t.
inline size_t row_bytes(DType t, int64_t head_dim) {
  const auto hd = static_cast<size_t>(head_dim);
  if (quantized(t)) {
    // An unsupported head_dim (group 0) is rejected by KvCache; size it as one group.
    const int64_t g = group_size(head_dim);
    const size_t scales = (g > 0 ? hd / static_cast<size_t>(g) : 1) * 2;
    return (t == DType::Q8_0 ? hd : (hd + 1) / 2) + scales;
  }
  return hd * dtype_info(t).type_size;
}

// Offset of the f16 scale area in a quantized tile.
inline size_t scale_offset(DType t, int64_t block_size, int64_t head_dim) {
  const auto n = static_cast<size_t>(block_size * head_dim);
  return t == DType::Q4_0 ? (n + 1) / 2 : n;
}
inline size_t q8_scale_offset(int64_t block_size, int64_t head_dim) {
  return scale_offset(DType::Q8_0, block_size, head_dim);
}

// Where the scale of (group g, slot) sits among a tile's scales.
inline int64_t scale_index(bool keys, int64_t g, int64_t slot, int64_t bs, int64_t n_groups) {
  return keys ? g * bs + slot : slot * n_groups + g;
}

// Quantizes one slot's key (keys = true) or value into a q8_0 tile (the reference).
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
          keys ? kv_layout::quad_key_index(d, slot, bs) : kv_layout::value_index(slot, d, hd);
      q[at] = static_cast<int8_t>(r);
    }
    scales[scale_index(keys, g, slot, bs, n_groups)] = sh;
  }
}

// The f16 scale of a q4_0 group (its signed largest-magnitude element / -8; NaNs are
// skipped) and the reciprocal the elements are multiplied by.
inline uint16_t q4_0_scale(const float* x, int64_t n, float* inv) {
  float amax = 0.0f, m = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (a > amax) {
      amax = a;
      m = x[i];
    }
  }
  const uint16_t sh = fp32_to_fp16(m / -8.0f);
  const float s = fp16_to_fp32(sh);
  *inv = s != 0.0f ? 1.0f / s : 0.0f;
  return sh;
}

// The nibble (q + 8) of element x at reciprocal scale inv.
inline uint8_t q4_0_nibble(float x, float inv) {
  const float r = std::fmin(7.0f, std::fmax(-8.0f, std::nearbyint(x * inv)));
  return static_cast<uint8_t>(static_cast<int>(r) + 8);
}

// Sets nibble i of a q4_0 tile, keeping the other nibble of its byte.
inline void set_nibble(uint8_t* tile, int64_t i, uint8_t v) {
  uint8_t& b = tile[i >> 1];
  b = (i & 1) ? static_cast<uint8_t>((b & 0x0F) | (v << 4)) : static_cast<uint8_t>((b & 0xF0) | v);
}
inline int get_nibble(const uint8_t* tile, int64_t i) {
  return (tile[i >> 1] >> ((i & 1) * 4)) & 0x0F;
}

// Quantizes one slot's key (keys = true) or value into a q4_0 tile (the reference).
inline void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs,
                       int64_t hd) {
  auto* scales = reinterpret_cast<uint16_t*>(tile + scale_offset(DType::Q4_0, bs, hd));
  const int64_t kGroup = group_size(hd);
  const int64_t n_groups = hd / kGroup;
  for (int64_t g = 0; g < n_groups; ++g) {
    float inv = 0.0f;
    scales[scale_index(keys, g, slot, bs, n_groups)] = q4_0_scale(src + g * kGroup, kGroup, &inv);
    for (int64_t i = 0; i < kGroup; ++i) {
      const int64_t d = g * kGroup + i;
      const int64_t at =
          keys ? kv_layout::quad_key_index(d, slot, bs) : kv_layout::value_index(slot, d, hd);
      set_nibble(tile, at, q4_0_nibble(src[d], inv));
    }
  }
}

// The reference store of a quantized type t.
inline void store(DType t, uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs,
                  int64_t hd) {
  if (t == DType::Q4_0) return store_q4_0(tile, keys, src, slot, bs, hd);
  store_q8_0(tile, keys, src, slot, bs, hd);
}

}  // namespace strata::kv_quant
