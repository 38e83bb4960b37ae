// AVX2 kernels for Q4_K and Q6_K weights against Q8_K activations, and the AVX2 Q8_K
// quantizer (bit-identical to ref::q8_k_from_float).
//
// Dot-product reduction order: every super-block is reduced exactly in integers (the
// scales are applied with madd, the mins or the -32 offset through the activation's
// bsums), giving one int32 per block; blocks are then accumulated in order into a single
// float with fma: acc = fma(d, scaled, acc) (and for Q4_K then acc = fma(-dmin, mins, acc)).
#include <cstring>

#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"

namespace strata::kernels::avx2 {
namespace {

// Unpacks the 6-bit scales and mins of a Q4_K block (layout in blocks.h), four per 32-bit
// word: bytes 0-7 of the result are sc[0..7], bytes 8-15 are m[0..7].
inline __m128i unpack_scales_mins(const uint8_t* packed) {
  uint32_t u0, u1, u2;
  std::memcpy(&u0, packed, 4);
  std::memcpy(&u1, packed + 4, 4);
  std::memcpy(&u2, packed + 8, 4);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t sc_lo = u0 & low6;
  const uint32_t m_lo = u1 & low6;
  const uint32_t sc_hi = (u2 & low4) | (((u0 >> 6) & low2) << 4);
  const uint32_t m_hi = ((u2 >> 4) & low4) | (((u1 >> 6) & low2) << 4);
  return _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo), static_cast<int>(sc_hi),
                       static_cast<int>(sc_lo));
}

// Shuffle mask that broadcasts int16 lane j of each 128-bit half to the whole half.
inline __m256i broadcast_i16_mask(int j) {
  return _mm256_set1_epi16(static_cast<int16_t>(((2 * j + 1) << 8) | (2 * j)));
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Shuffle mask that broadcasts int16 lane j of the low half to the low half and lane j + 1
// of the high half to the high half.
inline __m256i pair_i16_mask(int j) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((2 * j + 3) << 8) | (2 * j + 2))),
                          _mm_set1_epi16(static_cast<int16_t>(((2 * j + 1) << 8) | (2 * j))));
}

}  // namespace

void q8_k_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_K* blocks = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    BlockQ8_K& block = blocks[b];
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < kQK_K / 8; ++k) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(x + 8 * k)));
    const float amax = hmax(m);
    if (!(amax >= 1e-30f)) {
      block = BlockQ8_K{};
      continue;
    }
    const float iscale = 127.0f / amax;
    block.d = 1.0f / iscale;
    const __m256 vscale = _mm256_set1_ps(iscale);
    const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
    for (int g = 0; g < kQK_K / 32; ++g) {
      __m256i q[4];
      for (int k = 0; k < 4; ++k) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * k), vscale);
        const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[k] = _mm256_min_epi32(_mm256_max_epi32(_mm256_cvtps_epi32(r), lo), hi);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.qs + 32 * g),
                          pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    }
    const __m256i ones = _mm256_set1_epi16(1);
    for (int k = 0; k < kQK_K / 16; ++k) {
      const __m256i wide = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs + 16 * k)));
      block.bsums[k] = static_cast<int16_t>(hsum_i32(_mm256_madd_epi16(wide, ones)));
    }
  }
}

float q4_k_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ4_K* wb = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* ab = static_cast<const BlockQ8_K*>(a);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ4_K& wq = wb[b];
    const BlockQ8_K& aq = ab[b];
    const __m128i scales_mins = unpack_scales_mins(wq.scales);
    // sum_j m[j] * (bsums[2j] + bsums[2j+1]): each min repeated twice against the 16 bsums.
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m256i mins = _mm256_madd_epi16(mins16, load256(aq.bsums));
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    // Exact in int32: maddubs pairs are at most 2 x 15 x 127 (no saturation) and the block
    // total at most 256 x 63 x 15 x 127 < 2^31.
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i q = load256(wq.qs + 32 * k);
      const __m256i lo = _mm256_and_si256(q, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble);
      const __m256i p0 = _mm256_maddubs_epi16(lo, load256(aq.qs + 64 * k));
      const __m256i p1 = _mm256_maddubs_epi16(hi, load256(aq.qs + 64 * k + 32));
      const __m256i s0 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * k));
      const __m256i s1 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * k + 1));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p0, s0));
      sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p1, s1));
    }
    const float d = half_to_float(wq.d) * aq.d;
    const float dmin = half_to_float(wq.dmin) * aq.d;
    acc = fma_ss(d, static_cast<float>(hsum_i32(sumi)), acc);
    acc = fma_ss(-dmin, static_cast<float>(hsum_i32(mins)), acc);
  }
  return acc;
}

float q6_k_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* wb = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* ab = static_cast<const BlockQ8_K*>(a);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bits01 = _mm256_set1_epi8(0x03), bits23 = _mm256_set1_epi8(0x0c);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  float acc = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ6_K& wq = wb[b];
    const BlockQ8_K& aq = ab[b];
    // The quants are stored biased by +32; sum(scale * 32 * a) comes off at the end.
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq.scales)));
    const __m256i offset = _mm256_madd_epi16(scales16, load256(aq.bsums));
    __m256i sumi = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = load256(wq.ql + 64 * half);
      const __m256i ql1 = load256(wq.ql + 64 * half + 32);
      const __m256i qh = load256(wq.qh + 32 * half);
      // Biased 6-bit quants of elements 128 * half + 32 * k + [0, 32), in [0, 63].
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                             _mm256_slli_epi16(_mm256_and_si256(qh, bits01), 4));
      q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                             _mm256_slli_epi16(_mm256_and_si256(qh, bits23), 2));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                             _mm256_and_si256(qh, bits45));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45));
      // Scales of this half's 8 sub-blocks in both 128-bit halves.
      const __m256i half_scales = _mm256_broadcastsi128_si256(
          half == 0 ? _mm256_castsi256_si128(scales16) : _mm256_extracti128_si256(scales16, 1));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        // Pairs: at most 2 x 63 x 127 = 16002, no saturation. Lanes 0-7 of the product
        // cover sub-block 2k of this half, lanes 8-15 sub-block 2k + 1.
        const __m256i p = _mm256_maddubs_epi16(q[k], load256(aq.qs + 128 * half + 32 * k));
        const __m256i sc = _mm256_shuffle_epi8(half_scales, pair_i16_mask(2 * k));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, sc));
      }
    }
    // Exact in int32: the biased sum is at most 256 x 63 x 127 x 128 < 2^31.
    const int32_t scaled = hsum_i32(_mm256_sub_epi32(sumi, _mm256_slli_epi32(offset, 5)));
    acc = fma_ss(half_to_float(wq.d) * aq.d, static_cast<float>(scaled), acc);
  }
  return acc;
}

}  // namespace strata::kernels::avx2
