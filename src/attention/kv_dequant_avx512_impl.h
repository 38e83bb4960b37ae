// The AVX-512 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h),
// shared by kv_dequant_avx512.cpp (bf16 rounding in integer arithmetic) and
// kv_dequant_avx512bf16.cpp (AVX512_BF16's conversion): two rows of 16 elements (keys:
// dimensions d, d + 1; values: slots 2m, 2m + 1) per step, each q * scale rounded once to
// f32 and then to bf16 as fp32_to_bf16, packed as the pairs of kv/tile_layout.h's bf16
// layout. Include only from files compiled for AVX-512.
#pragma once

#include <immintrin.h>

#include "attention/kv_dequant.h"
#include "core/fp16.h"
#include "kv/kv_quant.h"

// Internal linkage (an unnamed namespace): each including file, compiled for its own ISA,
// keeps its own copies.
namespace strata::attention::avx512_dequant {
namespace {  // NOLINT(google-build-namespaces)

inline __m512 load_q(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
inline __m512 load_scales(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// 16 q4_0 elements from 8 bytes (low nibble first), as float q = nibble - 8.
inline __m512 unpack16(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
  const __m128i q = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q));
}

template <DType T>
inline __m512 load16(const uint8_t* q, int64_t at) {  // elements at..at+15 as float
  if constexpr (T == DType::Q4_0) {
    return unpack16(q + at / 2);
  } else {
    return load_q(reinterpret_cast<const int8_t*>(q) + at);
  }
}
template <DType T>
inline float elem(const uint8_t* q, int64_t at) {
  if constexpr (T == DType::Q4_0) {
    return static_cast<float>(kv_quant::get_nibble(q, at) - 8);
  } else {
    return static_cast<float>(reinterpret_cast<const int8_t*>(q)[at]);
  }
}

// Pack::store(out, a, b): 16 pairs (a[i], b[i]) rounded to bf16, a first, at out.
template <DType T, class Pack>
void dequant(const uint8_t* q, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  const auto* scales = reinterpret_cast<const uint16_t*>(q + kv_quant::scale_offset(T, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  if (keys) {
    // Rows d and d + 1 (one group: group sizes are even) hold bs keys' dimensions d, d + 1;
    // their scales are adjacent. Pair row d / 2 holds (d, d + 1) of each key.
    for (int64_t d = 0; d < hd; d += 2) {
      const uint16_t* sr = scales + (d / group) * bs;
      uint16_t* o = out + d * bs;
      int64_t j = 0;
      for (; j + 16 <= bs; j += 16) {
        const __m512 s = load_scales(sr + j);
        Pack::store(o + 2 * j, _mm512_mul_ps(load16<T>(q, d * bs + j), s),
                    _mm512_mul_ps(load16<T>(q, (d + 1) * bs + j), s));
      }
      for (; j < bs; ++j) {
        const float s = fp16_to_fp32(sr[j]);
        o[2 * j] = fp32_to_bf16(elem<T>(q, d * bs + j) * s);
        o[2 * j + 1] = fp32_to_bf16(elem<T>(q, (d + 1) * bs + j) * s);
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
      const __m512 sa = _mm512_set1_ps(_cvtsh_ss(scales[s0 * n_groups + g]));
      const __m512 sb =
          pair ? _mm512_set1_ps(_cvtsh_ss(scales[(s0 + 1) * n_groups + g])) : _mm512_setzero_ps();
      for (int64_t i = 0; i < group; i += 16) {
        const int64_t at = s0 * hd + g * group + i;
        const __m512 b = pair ? _mm512_mul_ps(load16<T>(q, at + hd), sb) : _mm512_setzero_ps();
        Pack::store(out + (s0 / 2 * hd + g * group + i) * 2, _mm512_mul_ps(load16<T>(q, at), sa),
                    b);
      }
    }
  }
}

}  // namespace
}  // namespace strata::attention::avx512_dequant
