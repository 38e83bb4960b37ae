// avx2 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h): two
// rows of 8 elements (keys: dimensions d, d + 1; values: slots 2m, 2m + 1) per step, each
// q * scale rounded once to f32 and then to bf16 as fp32_to_bf16, packed as the pairs of
// kv/tile_layout.h's bf16 layout.
#include <immintrin.h>

#include <cstring>

#include "attention/kv_dequant.h"
#include "core/fp16.h"
#include "kv/kv_quant.h"

namespace strata::attention::avx2 {
namespace {

inline __m256 load_scales(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// fp32_to_bf16 of 8 floats, the result in the high half of each lane.
inline __m256i bf16_high(__m256 x) {
  const __m256i b = _mm256_castps_si256(x);
  const __m256i r = _mm256_add_epi32(
      b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                          _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1))));
  // Both sides are non-negative as int32, so the signed compare is the unsigned one.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(r, _mm256_or_si256(b, _mm256_set1_epi32(0x00400000)), nan);
}
// 8 pairs (a[i], b[i]) as bf16, a in the low half, stored at out (16 elements).
inline void store_pairs(uint16_t* out, __m256 a, __m256 b) {
  const __m256i lo = _mm256_srli_epi32(bf16_high(a), 16);
  const __m256i hi =
      _mm256_and_si256(bf16_high(b), _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(lo, hi));
}

template <DType T>
inline __m256 load8(const uint8_t* q, int64_t at) {  // elements at..at+7 as float (at even)
  __m128i x;
  if constexpr (T == DType::Q4_0) {
    int32_t w;
    std::memcpy(&w, q + at / 2, sizeof w);
    const __m128i b = _mm_cvtsi32_si128(w);
    const __m128i m = _mm_set1_epi8(0x0F);
    const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
    x = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
  } else {
    x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + at));
  }
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
}
template <DType T>
inline float elem(const uint8_t* q, int64_t at) {
  if constexpr (T == DType::Q4_0) {
    return static_cast<float>(kv_quant::get_nibble(q, at) - 8);
  } else {
    return static_cast<float>(reinterpret_cast<const int8_t*>(q)[at]);
  }
}

template <DType T>
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
      // q4_0 rows start on a byte (bs even); the 8-key steps stay on whole bytes.
      for (; j + 8 <= bs; j += 8) {
        const __m256 s = load_scales(sr + j);
        store_pairs(o + 2 * j, _mm256_mul_ps(load8<T>(q, d * bs + j), s),
                    _mm256_mul_ps(load8<T>(q, (d + 1) * bs + j), s));
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
      const __m256 sa = _mm256_set1_ps(_cvtsh_ss(scales[s0 * n_groups + g]));
      const __m256 sb =
          pair ? _mm256_set1_ps(_cvtsh_ss(scales[(s0 + 1) * n_groups + g])) : _mm256_setzero_ps();
      for (int64_t i = 0; i < group; i += 8) {
        const int64_t at = s0 * hd + g * group + i;
        const __m256 b = pair ? _mm256_mul_ps(load8<T>(q, at + hd), sb) : _mm256_setzero_ps();
        store_pairs(out + (s0 / 2 * hd + g * group + i) * 2, _mm256_mul_ps(load8<T>(q, at), sa), b);
      }
    }
  }
}

}  // namespace

void dequant_q8_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  dequant<DType::Q8_0>(tile, keys, bs, hd, out);
}
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  dequant<DType::Q4_0>(tile, keys, bs, hd, out);
}

}  // namespace strata::attention::avx2
