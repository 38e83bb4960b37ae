// The row loops of quantize-on-write (kv_quantize.h), shared by the AVX2 and AVX-512
// files: one template over a vector policy Ops that supplies the three per-group steps
//   static float group_amax(const float* x, int64_t n);         max |x|, NaNs skipped
//   static float first_at(const float* x, int64_t n, float a);  first x with |x| == a
//   static void quantize(const float* x, int64_t n, float inv, float lo, float hi,
//                        int bias, int8_t* out);                 round, clamp, + bias
// The scale arithmetic and the stores are the same scalar code as kv/kv_quant.h's
// references, so every ISA gives their bytes. Include only from an ISA's .cpp file.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "core/fp16.h"
#include "kv/kv_quant.h"

namespace strata::attention::kv_rows {

// 16 nibbles (bytes 0..15) into 8 bytes, element 2i in the low nibble of byte i.
inline __m128i pack_nibbles(const int8_t* t) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
  return _mm_maddubs_epi16(v, _mm_set1_epi16(0x1001));  // t[2i] + 16 t[2i+1], as int16
}

template <class Ops>
void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  auto* q = reinterpret_cast<int8_t*>(tile);
  auto* scales = reinterpret_cast<uint16_t*>(tile + kv_quant::q8_scale_offset(bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  alignas(32) int8_t t[32];
  for (int64_t g = 0; g < n_groups; ++g) {
    const float* x = src + g * group;
    const uint16_t sh = fp32_to_fp16(Ops::group_amax(x, group) / 127.0f);
    const float s = fp16_to_fp32(sh);
    Ops::quantize(x, group, s > 0.0f ? 1.0f / s : 0.0f, -127.0f, 127.0f, 0, t);
    if (keys) {  // a group is whole dimension quads
      for (int64_t i = 0; i < group; i += 4) {
        std::memcpy(q + kv_layout::quad_key_index(g * group + i, slot, bs), t + i, 4);
      }
    } else {
      std::memcpy(q + kv_layout::value_index(slot, g * group, hd), t, static_cast<size_t>(group));
    }
    scales[kv_quant::scale_index(keys, g, slot, bs, n_groups)] = sh;
  }
}

template <class Ops>
void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  auto* scales = reinterpret_cast<uint16_t*>(tile + kv_quant::scale_offset(DType::Q4_0, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  alignas(32) int8_t t[32];
  for (int64_t g = 0; g < n_groups; ++g) {
    const float* x = src + g * group;
    const float amax = Ops::group_amax(x, group);
    const float m = amax > 0.0f ? Ops::first_at(x, group, amax) : 0.0f;
    const uint16_t sh = fp32_to_fp16(m / -8.0f);
    const float s = fp16_to_fp32(sh);
    Ops::quantize(x, group, s != 0.0f ? 1.0f / s : 0.0f, -8.0f, 7.0f, 8, t);
    scales[kv_quant::scale_index(keys, g, slot, bs, n_groups)] = sh;
    if (keys) {  // a slot's quad of dimensions is two whole bytes
      for (int64_t i = 0; i < group; i += 4) {
        uint8_t* dst = tile + kv_layout::quad_key_index(g * group + i, slot, bs) / 2;
        dst[0] = static_cast<uint8_t>(t[i] | t[i + 1] << 4);
        dst[1] = static_cast<uint8_t>(t[i + 2] | t[i + 3] << 4);
      }
      continue;
    }
    // A value's group is group / 2 whole bytes (hd even, groups of 16 or 32).
    uint8_t* dst = tile + kv_layout::value_index(slot, g * group, hd) / 2;
    const __m128i lo = pack_nibbles(t), hi = group > 16 ? pack_nibbles(t + 16) : lo;
    const __m128i b = _mm_packus_epi16(lo, hi);
    if (group > 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), b);
    } else {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
    }
  }
}

}  // namespace strata::attention::kv_rows
