// AVX-512 VNNI kernels for Q2_K, Q3_K, Q5_K and IQ4_XS weights against Q8_K activations,
// bit-identical to the AVX2 kernels (kquant_ext_avx2.cpp): each super-block is reduced
// exactly in integers and the blocks are accumulated in order with the same fmas, so only
// how the exact integers are reached differs (64 quants per instruction instead of 32).
//
// Q2_K / Q3_K (16-element sub-blocks): a half block's 32 quant bytes are broadcast to both
// 256-bit halves and shifted per half (vpsrlvw) so one register holds 64 quants in element
// order; vpmaddubsw against the activation, vpdpwssd with the sub-block scales.
// Q5_K: Q4_K's kernel (kquant_avx512.cpp) with the fifth bits shifted in the same way.
// IQ4_XS: 64 nibble bytes (4 sub-blocks) regrouped by 64-bit lanes into element order,
// looked up through the codebook (vpshufb), multiplied as |w| x sign(w) * a because
// vpmaddubsw needs one unsigned operand (AVX-512 has no vpsignb, a masked subtract does it).
#pragma GCC diagnostic ignored "-Wuninitialized"  // see legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/kquant_gemm.h"
#include "kernels/quant/kquant_scales.h"

namespace strata::kernels::avx512 {
namespace {

template <int T>
inline void activations(const uint8_t* a, int64_t a_stride, int64_t b, const BlockQ8_K* (&aq)[T]) {
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Shift counts per 16-bit lane: s in the low 256-bit half, s + step in the high one.
inline __m512i split_shift(int s, int step) {
  return _mm512_inserti64x4(_mm512_set1_epi16(static_cast<int16_t>(s)),
                            _mm256_set1_epi16(static_cast<int16_t>(s + step)), 1);
}

// acc = fma(d, sum, acc) [then fma(-dmin, mins, acc)]: the AVX2 kernels' float steps.
inline __m128 accumulate(__m128 acc, float d, int32_t sum) {
  return _mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(sum)), acc);
}

// The biased 16-element-sub-block kernels (Q2_K: bits = 2, no high bit; Q3_K: a third bit
// from hmask). Returns one half block's contribution for each token.
template <bool kQ3, int T>
inline void low_bits_half(const uint8_t* qs, const uint8_t* hmask, int half, __m512i scales16,
                          const BlockQ8_K* const (&aq)[T], __m512i (&sumi)[T]) {
  const __m512i two_bits = _mm512_set1_epi8(3), one = _mm512_set1_epi8(1);
  const __m512i q2 = _mm512_broadcast_i64x4(load256(qs + 32 * half));
#pragma GCC unroll 2
  for (int c = 0; c < 2; ++c) {
    // Elements 128 * half + 64c + [0, 64): bits 4c, 4c + 1 (low half) and 4c + 2, 4c + 3
    // (high half) of the quant bytes; Q3_K's bit 2 from bit 4 * half + 2c (+1) of hmask.
    __m512i q = _mm512_and_si512(_mm512_srlv_epi16(q2, split_shift(4 * c, 2)), two_bits);
    if constexpr (kQ3) {
      const __m512i h2 = _mm512_broadcast_i64x4(load256(hmask));
      const __m512i high =
          _mm512_and_si512(_mm512_srlv_epi16(h2, split_shift(4 * half + 2 * c, 1)), one);
      q = _mm512_or_si512(q, _mm512_slli_epi16(high, 2));
    }
    const __m512i sc = _mm512_permutexvar_epi16(kQ6KSubBlocks.load(2 * half + c), scales16);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i p =
          _mm512_maddubs_epi16(q, _mm512_loadu_si512(aq[t]->qs + 128 * half + 64 * c));
      sumi[t] = _mm512_dpwssd_epi32(sumi[t], p, sc);
    }
  }
}

template <int T>
void q2_k_tile(int64_t nb, const BlockQ2_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wq.scales));
    const __m256i scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0f)));
    const __m256i mins16 =
        _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
    const __m512i sc512 = _mm512_zextsi256_si512(scales16);
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half)
      low_bits_half<false, T>(wq.qs, nullptr, half, sc512, aq, sumi);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i mins = _mm256_madd_epi16(mins16, load256(aq[t]->bsums));
      const float d = _cvtsh_ss(wq.d) * aq[t]->d;
      const float dmin = _cvtsh_ss(wq.dmin) * aq[t]->d;
      acc[t] = accumulate(acc[t], d, _mm512_reduce_add_epi32(sumi[t]));
      acc[t] = accumulate(acc[t], -dmin, _mm512_reduce_add_epi32(_mm512_zextsi256_si512(mins)));
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
}

template <int T>
void q3_k_tile(int64_t nb, const BlockQ3_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m256i scales16 = _mm256_cvtepi8_epi16(unpack_q3_k_scales(wq.scales));
    const __m512i sc512 = _mm512_zextsi256_si512(scales16);
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half)
      low_bits_half<true, T>(wq.qs, wq.hmask, half, sc512, aq, sumi);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      // The quants are biased by +4: 4 * sum(scale * bsum) comes off, as in AVX2.
      const __m512i offset = _mm512_zextsi256_si512(
          _mm256_slli_epi32(_mm256_madd_epi16(scales16, load256(aq[t]->bsums)), 2));
      const int32_t scaled = _mm512_reduce_add_epi32(_mm512_sub_epi32(sumi[t], offset));
      acc[t] = accumulate(acc[t], _cvtsh_ss(wq.d) * aq[t]->d, scaled);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
}

template <int T>
void q5_k_tile(int64_t nb, const BlockQ5_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i nibble = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1);
  const __m512i subs[4] = {kQ4KSubBlocks.load(0), kQ4KSubBlocks.load(1), kQ4KSubBlocks.load(2),
                           kQ4KSubBlocks.load(3)};
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m128i scales_mins = unpack_q4_k_scales_mins(wq.scales);
    const __m512i scales16 = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(scales_mins));
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m512i qh2 = _mm512_broadcast_i64x4(load256(wq.qh));
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m512i q = _mm512_loadu_si512(wq.qs + 64 * half);
      const __m512i lo = _mm512_and_si512(q, nibble);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
      // Elements 128 * half + [0, 64) (chunk k = 2 * half) and + [64, 128) (k + 1): the
      // low nibbles take bit 2k of qh, the high nibbles bit 2k + 1.
      __m512i q0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
      __m512i q1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
      const __m512i h0 = _mm512_and_si512(_mm512_srlv_epi16(qh2, split_shift(4 * half, 1)), one);
      const __m512i h1 =
          _mm512_and_si512(_mm512_srlv_epi16(qh2, split_shift(4 * half + 2, 1)), one);
      q0 = _mm512_or_si512(q0, _mm512_slli_epi16(h0, 4));
      q1 = _mm512_or_si512(q1, _mm512_slli_epi16(h1, 4));
      const __m512i s0 = _mm512_permutexvar_epi16(subs[2 * half], scales16);
      const __m512i s1 = _mm512_permutexvar_epi16(subs[2 * half + 1], scales16);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* x = aq[t]->qs + 128 * half;
        // Pairs at most 2 x 31 x 128 (no saturation); block sums exact in int32.
        const __m512i p0 = _mm512_maddubs_epi16(q0, _mm512_loadu_si512(x));
        const __m512i p1 = _mm512_maddubs_epi16(q1, _mm512_loadu_si512(x + 64));
        sumi[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(sumi[t], p0, s0), p1, s1);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i mins = _mm256_madd_epi16(mins16, load256(aq[t]->bsums));
      const float d = _cvtsh_ss(wq.d) * aq[t]->d;
      const float dmin = _cvtsh_ss(wq.dmin) * aq[t]->d;
      acc[t] = accumulate(acc[t], d, _mm512_reduce_add_epi32(sumi[t]));
      acc[t] = accumulate(acc[t], -dmin, _mm512_reduce_add_epi32(_mm512_zextsi256_si512(mins)));
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
}

template <int T>
void iq4_xs_tile(int64_t nb, const BlockIQ4_XS* wb, const uint8_t* a, int64_t a_stride, float* y,
                 int64_t ldy) {
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i table =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  // 64-bit lane indices into (lo, hi): sub-blocks 4h, 4h + 1 are lo.0 hi.0 lo.1 hi.1 (16
  // bytes each), sub-blocks 4h + 2, 4h + 3 lo.2 hi.2 lo.3 hi.3.
  const __m512i first = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m512i second = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
  const __m512i subs[4] = {kQ4KSubBlocks.load(0), kQ4KSubBlocks.load(1), kQ4KSubBlocks.load(2),
                           kQ4KSubBlocks.load(3)};
  const __m512i zero = _mm512_setzero_si512();
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m512i scales16 = _mm512_zextsi128_si512(unpack_iq4_xs_scales(wq.scales_h, wq.scales_l));
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m512i q = _mm512_loadu_si512(wq.qs + 64 * half);
      const __m512i lo = _mm512_and_si512(q, nibble);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
      __m512i v[2] = {_mm512_shuffle_epi8(table, _mm512_permutex2var_epi64(lo, first, hi)),
                      _mm512_shuffle_epi8(table, _mm512_permutex2var_epi64(lo, second, hi))};
#pragma GCC unroll 2
      for (int c = 0; c < 2; ++c) {
        const __m512i av = _mm512_abs_epi8(v[c]);
        const __mmask64 negative = _mm512_movepi8_mask(v[c]);
        const __m512i sc = _mm512_permutexvar_epi16(subs[2 * half + c], scales16);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m512i x = _mm512_loadu_si512(aq[t]->qs + 128 * half + 64 * c);
          const __m512i sx = _mm512_mask_sub_epi8(x, negative, zero, x);
          // Pairs at most 2 x 127 x 127 < 2^15: no saturation.
          sumi[t] = _mm512_dpwssd_epi32(sumi[t], _mm512_maddubs_epi16(av, sx), sc);
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc[t] = accumulate(acc[t], _cvtsh_ss(wq.d) * aq[t]->d, _mm512_reduce_add_epi32(sumi[t]));
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
}

template <class Block,
          void (*tile)(int64_t, const Block*, const uint8_t*, int64_t, float*, int64_t)>
float vec_dot_one(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  tile(n / kQK_K, static_cast<const Block*>(w), static_cast<const uint8_t*>(a), 0, &y, 0);
  return y;
}

}  // namespace

float q2_k_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_one<BlockQ2_K, q2_k_tile<1>>(n, w, a);
}
float q3_k_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_one<BlockQ3_K, q3_k_tile<1>>(n, w, a);
}
float q5_k_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_one<BlockQ5_K, q5_k_tile<1>>(n, w, a);
}
float iq4_xs_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_one<BlockIQ4_XS, iq4_xs_tile<1>>(n, w, a);
}

void q2_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockQ2_K>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, q2_k_tile<1>, q2_k_tile<2>,
                         q2_k_tile<3>, q2_k_tile<4>);
}
void q3_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockQ3_K>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, q3_k_tile<1>, q3_k_tile<2>,
                         q3_k_tile<3>, q3_k_tile<4>);
}
void q5_k_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockQ5_K>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, q5_k_tile<1>, q5_k_tile<2>,
                         q5_k_tile<3>, q5_k_tile<4>);
}
void iq4_xs_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_kquant<BlockIQ4_XS>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, iq4_xs_tile<1>,
                           iq4_xs_tile<2>, iq4_xs_tile<3>, iq4_xs_tile<4>);
}

}  // namespace strata::kernels::avx512
