// AVX2 kernels for Q4_K and Q6_K weights against Q8_K activations, and the AVX2 Q8_K
// quantizer (bit-identical to ref::q8_k_from_float).
//
// Dot-product reduction order: every super-block is reduced exactly in integers (the
// scales are applied with madd, the mins or the -32 offset through the activation's
// bsums), giving one int32 per block; blocks are then accumulated in order into a single
// float with fma: acc = fma(d, scaled, acc) (and for Q4_K then acc = fma(-dmin, mins, acc)).
// vec_dot and gemm run the same tile template (vec_dot with one token), so every gemm
// output is bit-identical to vec_dot's.
#include <cstring>

#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_gemm.h"
#include "kernels/quant/kquant_scales.h"

namespace strata::kernels::avx2 {

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
        __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        // NaN (an infinite input times the zero scale an infinite amax gives) becomes 0, as
        // in the reference's nearest_int; the conversion would make it INT_MIN, then -127.
        r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q));
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

namespace {

// One Q4_K weight row against T activation rows: the row's nibbles and scales are
// unpacked once per block and used for every token. Per (row, token) the integer sums are
// exact, so they equal any other grouping; the float steps are the two fmas per block of
// the reduction order above. With T = 1 this is the vec_dot.
template <int T>
void q4_k_tile(int64_t nb, const BlockQ4_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K& wq = wb[b];
    const BlockQ8_K* aq[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
    const __m128i scales_mins = unpack_q4_k_scales_mins(wq.scales);
    // sum_j m[j] * (bsums[2j] + bsums[2j+1]): each min repeated twice against the 16 bsums.
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    // Exact in int32: maddubs pairs are at most 2 x 15 x 127 (no saturation) and the block
    // total at most 256 x 63 x 15 x 127 < 2^31.
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i q = load256(wq.qs + 32 * k);
      const __m256i lo = _mm256_and_si256(q, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble);
      const __m256i s0 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * k));
      const __m256i s1 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * k + 1));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i p0 = _mm256_maddubs_epi16(lo, load256(aq[t]->qs + 64 * k));
        const __m256i p1 = _mm256_maddubs_epi16(hi, load256(aq[t]->qs + 64 * k + 32));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p0, s0));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p1, s1));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i mins = _mm256_madd_epi16(mins16, load256(aq[t]->bsums));
      const float d = half_to_float(wq.d) * aq[t]->d;
      const float dmin = half_to_float(wq.dmin) * aq[t]->d;
      acc[t] = fma_ss(d, static_cast<float>(hsum_i32(sumi[t])), acc[t]);
      acc[t] = fma_ss(-dmin, static_cast<float>(hsum_i32(mins)), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = acc[t];
}

// The same for Q6_K: the 6-bit quants and scales of each half block are unpacked once.
template <int T>
void q6_k_tile(int64_t nb, const BlockQ6_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i bits01 = _mm256_set1_epi8(0x03), bits23 = _mm256_set1_epi8(0x0c);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_K& wq = wb[b];
    const BlockQ8_K* aq[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
    // The quants are stored biased by +32; sum(scale * 32 * a) comes off at the end.
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq.scales)));
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
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
        const __m256i sc = _mm256_shuffle_epi8(half_scales, pair_i16_mask(2 * k));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m256i p = _mm256_maddubs_epi16(q[k], load256(aq[t]->qs + 128 * half + 32 * k));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, sc));
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i offset = _mm256_madd_epi16(scales16, load256(aq[t]->bsums));
      // Exact in int32: the biased sum is at most 256 x 63 x 127 x 128 < 2^31.
      const int32_t scaled = hsum_i32(_mm256_sub_epi32(sumi[t], _mm256_slli_epi32(offset, 5)));
      acc[t] = fma_ss(half_to_float(wq.d) * aq[t]->d, static_cast<float>(scaled), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = acc[t];
}

}  // namespace

float q4_k_vec_dot(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  q4_k_tile<1>(n / kQK_K, static_cast<const BlockQ4_K*>(w), static_cast<const uint8_t*>(a), 0, &y,
               0);
  return y;
}

float q6_k_vec_dot(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  q6_k_tile<1>(n / kQK_K, static_cast<const BlockQ6_K*>(w), static_cast<const uint8_t*>(a), 0, &y,
               0);
  return y;
}

void q4_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockQ4_K>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, q4_k_tile<1>, q4_k_tile<2>,
                         q4_k_tile<3>, q4_k_tile<4>);
}

void q6_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockQ6_K>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, q6_k_tile<1>, q6_k_tile<2>,
                         q6_k_tile<3>, q6_k_tile<4>);
}

}  // namespace strata::kernels::avx2
