// AVX-512 VNNI kernels for Q4_K and Q6_K weights against Q8_K activations (the types of
// llama.cpp's Q4_K_M files; Q6_K is also the classifier of its Q4_0 files), bit-identical
// to the AVX2 kernels (kquant_avx2.cpp): each super-block is reduced exactly in integers
// and the blocks are then accumulated in order with the same fmas, so only how the exact
// integers are reached differs.
//
// Q4_K, per half block (128 quants): one 64-byte load of nibbles, split into low and high
// nibbles and regrouped by 128-bit lanes into two registers of 64 quants in element order
// (two sub-blocks each), vpmaddubsw against the activation, vpdpwssd with the sub-block
// scales; the mins come off through the activation's block sums, as in AVX2.
//
// Q6_K, per super-block and half (128 quants): one 64-byte load of the low nibbles and one
// 32-byte load of the high bits, broadcast to both 256-bit halves and shifted per half
// (bits 0-1 and 4-5 pair with the low 32 bytes of nibbles, bits 2-3 and 6-7 with the
// high 32), give two registers of 64 biased quants in element order; vpmaddubsw against
// the activation gives one int16 per 2 elements, and vpdpwssd multiplies those by the
// sub-block scales (16 elements, 8 int16 lanes each) into int32 sums. The AVX2 kernel
// needs about twice the instructions for the same bytes and ran at 46-49 GB/s with the
// weights in cache (this one 64-70; kernels_matmul_bench).
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
void q4_k_tile(int64_t nb, const BlockQ4_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i nibble = _mm512_set1_epi8(0x0f);
  const __m512i subs[4] = {kQ4KSubBlocks.load(0), kQ4KSubBlocks.load(1), kQ4KSubBlocks.load(2),
                           kQ4KSubBlocks.load(3)};
  // The running sums stay in registers (lane 0): building them from scalars each block put
  // lane inserts on the fma chain that carries the blocks in order.
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K& wq = wb[b];
    const BlockQ8_K* aq[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
    const __m128i scales_mins = unpack_q4_k_scales_mins(wq.scales);
    const __m512i scales16 = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(scales_mins));
    // sum_j m[j] * (bsums[2j] + bsums[2j+1]): each min repeated twice against the 16 bsums.
    const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scales_mins, scales_mins));
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      // Bytes 32k..32k+31 hold elements 64k..64k+31 (low nibbles) and 64k+32..64k+63 (high).
      const __m512i q = _mm512_loadu_si512(wq.qs + 64 * half);
      const __m512i lo = _mm512_and_si512(q, nibble);
      const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), nibble);
      // Elements 128 * half + [0, 64) and + [64, 128).
      const __m512i q0 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));
      const __m512i q1 = _mm512_shuffle_i64x2(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));
      const __m512i s0 = _mm512_permutexvar_epi16(subs[2 * half], scales16);
      const __m512i s1 = _mm512_permutexvar_epi16(subs[2 * half + 1], scales16);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* x = aq[t]->qs + 128 * half;
        // Pairs at most 2 x 15 x 128 (no saturation); sums exact in int32 (at most
        // 256 x 63 x 15 x 128 < 2^31), as in AVX2.
        const __m512i p0 = _mm512_maddubs_epi16(q0, _mm512_loadu_si512(x));
        const __m512i p1 = _mm512_maddubs_epi16(q1, _mm512_loadu_si512(x + 64));
        sumi[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(sumi[t], p0, s0), p1, s1);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m256i mins = _mm256_madd_epi16(
          mins16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq[t]->bsums)));
      const float d = _cvtsh_ss(wq.d) * aq[t]->d;
      const float dmin = _cvtsh_ss(wq.dmin) * aq[t]->d;
      const float sum = static_cast<float>(_mm512_reduce_add_epi32(sumi[t]));
      const float min_sum =
          static_cast<float>(_mm512_reduce_add_epi32(_mm512_zextsi256_si512(mins)));
      acc[t] = _mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(sum), acc[t]);
      acc[t] = _mm_fmadd_ss(_mm_set_ss(-dmin), _mm_set_ss(min_sum), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
}

template <int T>
void q6_k_tile(int64_t nb, const BlockQ6_K* wb, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), low2 = _mm512_set1_epi8(0x03);
  const __m512i subs[4] = {kQ6KSubBlocks.load(0), kQ6KSubBlocks.load(1), kQ6KSubBlocks.load(2),
                           kQ6KSubBlocks.load(3)};
  // Shift counts per 16-bit lane: the high bits of the low 32 nibble bytes are bits 0-1
  // (first 64 quants) and 4-5 (second), those of the high 32 bytes bits 2-3 and 6-7.
  const __m512i shift_first = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
  const __m512i shift_second = _mm512_add_epi16(shift_first, _mm512_set1_epi16(4));
  // The running sums stay in registers (lane 0): building them from scalars each block put
  // lane inserts on the fma chain that carries the blocks in order.
  __m128 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_K& wq = wb[b];
    const BlockQ8_K* aq[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) aq[t] = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride) + b;
    const __m512i scales16 = _mm512_zextsi256_si512(
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wq.scales))));
    __m512i sumi[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) sumi[t] = _mm512_setzero_si512();
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
      const __m512i lo = _mm512_loadu_si512(wq.ql + 64 * half);
      const __m512i hi = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq.qh + 32 * half)));
      // Biased quants (in [0, 63]) of elements 128 * half + [0, 64) and + [64, 128).
      const __m512i q0 = _mm512_or_si512(
          _mm512_and_si512(lo, low4),
          _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hi, shift_first), low2), 4));
      const __m512i q1 = _mm512_or_si512(
          _mm512_and_si512(_mm512_srli_epi16(lo, 4), low4),
          _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hi, shift_second), low2), 4));
      const __m512i s0 = _mm512_permutexvar_epi16(subs[2 * half], scales16);
      const __m512i s1 = _mm512_permutexvar_epi16(subs[2 * half + 1], scales16);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const int8_t* x = aq[t]->qs + 128 * half;
        // Pairs of products: at most 2 x 63 x 128 = 16128, no saturation; then times the
        // scale and summed in pairs into int32 lanes (vpdpwssd), exact.
        const __m512i p0 = _mm512_maddubs_epi16(q0, _mm512_loadu_si512(x));
        const __m512i p1 = _mm512_maddubs_epi16(q1, _mm512_loadu_si512(x + 64));
        sumi[t] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(sumi[t], p0, s0), p1, s1);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      // The quants are stored biased by +32: sum(scale * 32 * a) comes off, as in AVX2.
      const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq[t]->bsums));
      const __m512i offset = _mm512_zextsi256_si512(
          _mm256_slli_epi32(_mm256_madd_epi16(_mm512_castsi512_si256(scales16), bsums), 5));
      const int32_t scaled = _mm512_reduce_add_epi32(_mm512_sub_epi32(sumi[t], offset));
      const float d = _cvtsh_ss(wq.d) * aq[t]->d;
      acc[t] = _mm_fmadd_ss(_mm_set_ss(d), _mm_set_ss(static_cast<float>(scaled)), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = _mm_cvtss_f32(acc[t]);
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

}  // namespace strata::kernels::avx512
