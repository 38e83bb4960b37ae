// The row loops of KV tile dequantization (kv_dequant.h), shared by the AVX2 and AVX-512
// files: one template over a vector policy V of kWidth float lanes that supplies
//   V::vec                                   the float vector type
//   static vec load<T>(const uint8_t* q, int64_t at);   elements at.. as float (at even)
//   static vec load_scales(const uint16_t* p);           kWidth f16 scales as float
//   static vec splat_scale(uint16_t h);                  one f16 scale, exact (F16C)
//   static vec mul(vec a, vec b), zero();
//   static void store(uint16_t* out, vec a, vec b);      pairs (a[i], b[i]) as bf16
// Each element is q * scale rounded once to f32 and then to bf16 as fp32_to_bf16, packed
// as the pairs of kv/tile_layout.h's bf16 layout. Include only from an ISA's .cpp file.
#pragma once

#include <cstdint>

#include "attention/kv_dequant.h"
#include "core/dtype.h"
#include "core/fp16.h"
#include "kv/kv_quant.h"

namespace strata::attention::kv_rows {

template <DType T>
inline float dequant_elem(const uint8_t* q, int64_t at) {
  if constexpr (T == DType::Q4_0) {
    return static_cast<float>(kv_quant::get_nibble(q, at) - 8);
  } else {
    return static_cast<float>(reinterpret_cast<const int8_t*>(q)[at]);
  }
}

template <DType T, class V>
void dequant(const uint8_t* q, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  // Attention folds q8_0 keys as stored (int8 dimension quads); only the tests convert them.
  if (T == DType::Q8_0 && keys) return reference_kv_dequant().q8_0(q, keys, bs, hd, out);
  constexpr int64_t W = V::kWidth;
  const auto* scales = reinterpret_cast<const uint16_t*>(q + kv_quant::scale_offset(T, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  if (keys) {
    // Rows d and d + 1 (one group: group sizes are even) hold bs keys' dimensions d, d + 1;
    // their scales are adjacent. Pair row d / 2 holds (d, d + 1) of each key. q4_0 rows
    // start on a byte (bs even); the W-key steps stay on whole bytes.
    for (int64_t d = 0; d < hd; d += 2) {
      const uint16_t* sr = scales + (d / group) * bs;
      uint16_t* o = out + d * bs;
      int64_t j = 0;
      for (; j + W <= bs; j += W) {
        const auto s = V::load_scales(sr + j);
        V::store(o + 2 * j, V::mul(V::template load<T>(q, d * bs + j), s),
                 V::mul(V::template load<T>(q, (d + 1) * bs + j), s));
      }
      for (; j < bs; ++j) {
        const float s = fp16_to_fp32(sr[j]);
        o[2 * j] = fp32_to_bf16(dequant_elem<T>(q, d * bs + j) * s);
        o[2 * j + 1] = fp32_to_bf16(dequant_elem<T>(q, (d + 1) * bs + j) * s);
      }
    }
    return;
  }
  // Values row-major: a group's consecutive dimensions of a slot share one scale (converted
  // by F16C, exact as fp16_to_fp32, which branches and took a fifth of the time). Pair row
  // m holds slots 2m, 2m + 1 of each dimension; an odd bs's last slot pairs with zeros.
  for (int64_t s0 = 0; s0 < bs; s0 += 2) {
    const bool pair = s0 + 1 < bs;
    for (int64_t g = 0; g < n_groups; ++g) {
      const auto sa = V::splat_scale(scales[s0 * n_groups + g]);
      const auto sb = pair ? V::splat_scale(scales[(s0 + 1) * n_groups + g]) : V::zero();
      for (int64_t i = 0; i < group; i += W) {
        const int64_t at = s0 * hd + g * group + i;
        const auto b = pair ? V::mul(V::template load<T>(q, at + hd), sb) : V::zero();
        V::store(out + (s0 / 2 * hd + g * group + i) * 2, V::mul(V::template load<T>(q, at), sa),
                 b);
      }
    }
  }
}

}  // namespace strata::attention::kv_rows
