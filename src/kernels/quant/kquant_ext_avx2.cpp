// AVX2 kernels for Q2_K, Q3_K, Q5_K and IQ4_XS weights against Q8_K activations.
//
// Reduction order (kquant_avx2.cpp's): every super-block is reduced exactly in integers,
// giving one int32 per block; blocks are then accumulated in order into one float with
// acc = fma(d, scaled, acc), and for the types with mins (Q2_K, Q5_K) then
// acc = fma(-dmin, mins, acc), with d = d_w * d_a and dmin = dmin_w * d_a rounded to float.
// The AVX-512 kernels (kquant_ext_avx512.cpp) reach the same integers and do the same
// fmas, so the two levels agree bit for bit. vec_dot is the tile with one token.
//
// Quants enter vpmaddubsw as its unsigned operand: Q2_K's as they are ([0, 3]), Q3_K's
// biased by 4 ([0, 7], the bias comes off through the activation's block sums), Q5_K's
// as they are ([0, 31]); IQ4_XS's codebook values are signed, so they take the sign trick
// of dot_i8 (avx2_util.h).
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"
#include "kernels/quant/kquant_gemm.h"
#include "kernels/quant/kquant_scales.h"

namespace strata::kernels::avx2 {
namespace {

template <int T>
inline void activations(const uint8_t* a, int64_t a_stride, int64_t b, const BlockQ8_K* (&aq)[T]) {
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
}

// Q2_K: 16-element sub-blocks, so each 32-quant vector spans two of them: int16 lanes 0-7
// of its vpmaddubsw product belong to the first, lanes 8-15 to the second (pair_i16_mask).
template <int T>
void q2_k_tile(int64_t nb, const BlockQ2_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i two_bits = _mm256_set1_epi8(3);
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ2_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wq.scales));
    const __m256i scales16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(0x0f)));
    const __m256i mins16 =
        _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0f)));
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load256(wq.qs + 32 * half);
      const __m256i half_scales = _mm256_broadcastsi128_si256(
          half == 0 ? _mm256_castsi256_si128(scales16) : _mm256_extracti128_si256(scales16, 1));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), two_bits);
        const __m256i sc = _mm256_shuffle_epi8(half_scales, pair_i16_mask(2 * j));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m256i p = _mm256_maddubs_epi16(q, load256(aq[t]->qs + 128 * half + 32 * j));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, sc));
        }
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

// Q3_K: as Q2_K with a third bit from hmask and signed 6-bit scales; the quants are
// biased by +4, and 4 * sum(scale * bsum) comes off at the end.
template <int T>
void q3_k_tile(int64_t nb, const BlockQ3_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i two_bits = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ3_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m256i scales16 = _mm256_cvtepi8_epi16(unpack_q3_k_scales(wq.scales));
    const __m256i hmask = load256(wq.hmask);
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m256i qs = load256(wq.qs + 32 * half);
      const __m256i half_scales = _mm256_broadcastsi128_si256(
          half == 0 ? _mm256_castsi256_si128(scales16) : _mm256_extracti128_si256(scales16, 1));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        // Elements 128 * half + 32 * j + [0, 32): bit 4 * half + j of hmask is bit 2.
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * half + j), one);
        const __m256i q = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * j), two_bits),
                                          _mm256_slli_epi16(high, 2));
        const __m256i sc = _mm256_shuffle_epi8(half_scales, pair_i16_mask(2 * j));
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          const __m256i p = _mm256_maddubs_epi16(q, load256(aq[t]->qs + 128 * half + 32 * j));
          sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(p, sc));
        }
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i offset = _mm256_madd_epi16(scales16, load256(aq[t]->bsums));
      // Exact in int32: |biased sum| <= 256 x 7 x 127 x 32 < 2^23.
      const int32_t scaled = hsum_i32(_mm256_sub_epi32(sumi[t], _mm256_slli_epi32(offset, 2)));
      acc[t] = fma_ss(half_to_float(wq.d) * aq[t]->d, static_cast<float>(scaled), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = acc[t];
}

// Q5_K: Q4_K's kernel (kquant_avx2.cpp) with the fifth bit of each quant from qh.
template <int T>
void q5_k_tile(int64_t nb, const BlockQ5_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), one = _mm256_set1_epi8(1);
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ5_K& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m128i scales_mins = unpack_q4_k_scales_mins(wq.scales);
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    const __m256i scales16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    const __m256i qh = load256(wq.qh);
    // Exact in int32: pairs at most 2 x 31 x 127, the block at most 256 x 63 x 31 x 127.
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m256i q = load256(wq.qs + 32 * k);
      const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), one);
      const __m256i h1 = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k + 1), one);
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, nibble), _mm256_slli_epi16(h0, 4));
      const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), nibble),
                                         _mm256_slli_epi16(h1, 4));
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

// IQ4_XS: each 32-byte load holds two 32-element sub-blocks (16 bytes each, low nibbles
// first); regrouping the 128-bit halves puts each sub-block's 32 nibbles in element order,
// and vpshufb maps them through the codebook.
template <int T>
void iq4_xs_tile(int64_t nb, const BlockIQ4_XS* wb, const uint8_t* a, int64_t a_stride, float* y,
                 int64_t ldy) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  float acc[T] = {};
  for (int64_t b = 0; b < nb; ++b) {
    const BlockIQ4_XS& wq = wb[b];
    const BlockQ8_K* aq[T];
    activations<T>(a, a_stride, b, aq);
    const __m256i scales16 =
        _mm256_broadcastsi128_si256(unpack_iq4_xs_scales(wq.scales_h, wq.scales_l));
    // Exact in int32: pairs at most 2 x 127 x 127 < 2^15, the block at most
    // 256 x 127 x 127 x 32 < 2^28.
    __m256i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m256i q = load256(wq.qs + 32 * p);
      const __m256i lo = _mm256_and_si256(q, nibble);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), nibble);
      const __m256i v0 = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x20));
      const __m256i v1 = _mm256_shuffle_epi8(table, _mm256_permute2x128_si256(lo, hi, 0x31));
      const __m256i av0 = _mm256_sign_epi8(v0, v0), av1 = _mm256_sign_epi8(v1, v1);
      const __m256i s0 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * p));
      const __m256i s1 = _mm256_shuffle_epi8(scales16, broadcast_i16_mask(2 * p + 1));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m256i a0 = _mm256_sign_epi8(load256(aq[t]->qs + 64 * p), v0);
        const __m256i a1 = _mm256_sign_epi8(load256(aq[t]->qs + 64 * p + 32), v1);
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(av0, a0), s0));
        sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(av1, a1), s1));
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc[t] =
          fma_ss(half_to_float(wq.d) * aq[t]->d, static_cast<float>(hsum_i32(sumi[t])), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = acc[t];
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

}  // namespace strata::kernels::avx2
