// avx2 dequantization of q8_0 and q4_0 KV tiles (see kv_dequant.h): 8 elements per register,
// each q * scale rounded once, as the reference.
#include <immintrin.h>

#include "attention/kv_dequant.h"
#include "core/fp16.h"
#include "kv/kv_quant.h"

namespace strata::attention::avx2 {
namespace {

inline __m256 load_q(const int8_t* p) {
  return _mm256_cvtepi32_ps(
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
inline __m256 load_scales(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// 16 q4_0 elements from 8 bytes (low nibble first), as int8 q = nibble - 8.
inline __m128i unpack16(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
  return _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
}
// Stores 16 dequantized elements: q (16 int8) times 16 scales.
inline void store16(float* o, __m128i q, __m256 s0, __m256 s1) {
  _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s0));
  _mm256_storeu_ps(
      o + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))), s1));
}

}  // namespace

void dequant_q8_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, float* out) {
  const auto* q = reinterpret_cast<const int8_t*>(tile);
  const auto* scales = reinterpret_cast<const uint16_t*>(tile + kv_quant::q8_scale_offset(bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  if (keys) {
    // Row d holds bs keys' dimension d; their scales for d's group are adjacent.
    for (int64_t d = 0; d < hd; ++d) {
      const int8_t* qr = q + d * bs;
      const uint16_t* sr = scales + (d / group) * bs;
      float* o = out + d * bs;
      int64_t j = 0;
      for (; j + 8 <= bs; j += 8)
        _mm256_storeu_ps(o + j, _mm256_mul_ps(load_q(qr + j), load_scales(sr + j)));
      for (; j < bs; ++j) o[j] = static_cast<float>(qr[j]) * fp16_to_fp32(sr[j]);
    }
    return;
  }
  // Values row-major: 32 consecutive dimensions of a slot share one scale.
  for (int64_t slot = 0; slot < bs; ++slot) {
    for (int64_t g = 0; g < n_groups; ++g) {
      const __m256 s = _mm256_set1_ps(fp16_to_fp32(scales[slot * n_groups + g]));
      const int64_t at = slot * hd + g * group;
      for (int64_t i = 0; i < group; i += 8)
        _mm256_storeu_ps(out + at + i, _mm256_mul_ps(load_q(q + at + i), s));
    }
  }
}

void dequant_q4_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, float* out) {
  const uint8_t* q = tile;
  const auto* scales =
      reinterpret_cast<const uint16_t*>(tile + kv_quant::scale_offset(DType::Q4_0, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  if (keys) {
    // Row d holds bs keys' dimension d (bs / 2 bytes, bs even); their scales are adjacent.
    for (int64_t d = 0; d < hd; ++d) {
      const uint8_t* qr = q + d * bs / 2;
      const uint16_t* sr = scales + (d / group) * bs;
      float* o = out + d * bs;
      int64_t j = 0;
      for (; j + 16 <= bs; j += 16)
        store16(o + j, unpack16(qr + j / 2), load_scales(sr + j), load_scales(sr + j + 8));
      for (; j < bs; ++j)
        o[j] = static_cast<float>(kv_quant::get_nibble(qr, j) - 8) * fp16_to_fp32(sr[j]);
    }
    return;
  }
  // Values row-major: a group's 16 or 32 consecutive dimensions of a slot share one scale.
  for (int64_t slot = 0; slot < bs; ++slot) {
    for (int64_t g = 0; g < n_groups; ++g) {
      const __m256 s = _mm256_set1_ps(fp16_to_fp32(scales[slot * n_groups + g]));
      const int64_t at = slot * hd + g * group;
      for (int64_t i = 0; i < group; i += 16)
        store16(out + at + i, unpack16(q + (at + i) / 2), s, s);
    }
  }
}

}  // namespace strata::attention::avx2
