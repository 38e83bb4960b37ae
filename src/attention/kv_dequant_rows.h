// The row loops of KV tile dequantization (kv_dequant.h), shared by the AVX2 and AVX-512
// files: one template over a vector policy V of kWidth float lanes that supplies
//   V::vec                                   the float vector type
//   static vec load<T>(const uint8_t* q, int64_t at);   elements at.. as float (at even)
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

template <DType T, class V>
void dequant(const uint8_t* q, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  // Attention folds keys as stored (int8 or nibble quads); only the tests convert them.
  if (keys) {
    const KvDequantKernels& ref = reference_kv_dequant();
    return (T == DType::Q4_0 ? ref.q4_0 : ref.q8_0)(q, keys, bs, hd, out);
  }
  constexpr int64_t W = V::kWidth;
  const auto* scales = reinterpret_cast<const uint16_t*>(q + kv_quant::scale_offset(T, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
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
