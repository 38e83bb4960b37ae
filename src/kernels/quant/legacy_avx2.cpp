// AVX2 kernels for the 32-element block types (Q8_0, Q4_0, Q5_0, IQ4_NL and the affine
// Q4_1, Q5_1) against Q8_0 activations, and the AVX2 Q8_0 quantizer (bit-identical to
// ref::q8_0_from_float).
//
// Dot-product reduction order, shared by vec_dot and gemm (vec_dot is gemm with one row and
// one token, so the same template computes every output): each block's 32 products are
// summed exactly in int32 (8 lanes, lane i holding elements 4i..4i+3), converted to float
// and multiplied-added as acc = fma(d_w * d_a, sums, acc) into one of two 8-lane
// accumulators per (row, token) (even blocks -> acc0, odd blocks -> acc1, an odd last
// block -> acc0); the result is hsum(acc0 + acc1). No output depends on which tile, batch
// or thread computed it. The affine types (value = d * q + m) add a second step per block,
// acc = fma(m_w * d_a, asum, acc), with asum lane i the sum of activations 4i..4i+3.
#include <type_traits>

#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"

namespace strata::kernels::avx2 {
namespace {

inline __m256i load_q8_0(const BlockQ8_0& block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs));
}

// A weight block's quants as signed int8 in element order (Q4_0: low nibbles, then high
// nibbles, minus the offset 8).
inline __m256i signed_quants(const BlockQ8_0& block) {
  return load_q8_0(block);
}
inline __m256i signed_quants(const BlockQ4_0& block) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
  return _mm256_sub_epi8(_mm256_and_si256(both, _mm256_set1_epi8(0x0f)), _mm256_set1_epi8(8));
}

// The 32 nibbles of a Q4_0-ordered qs in element order, in [0, 15].
inline __m256i nibbles(const uint8_t* qs) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Byte i is 0x10 where bit i of the 32-bit qh is set, else 0: the fifth quant bit of Q5_0 and
// Q5_1. Byte i is shuffled from qh byte i / 8 and tested against bit i % 8.
inline __m256i fifth_bits(const uint8_t* qh_bytes) {
  uint32_t qh;
  __builtin_memcpy(&qh, qh_bytes, 4);
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                          _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

inline __m256i signed_quants(const BlockQ5_0& block) {
  return _mm256_sub_epi8(_mm256_or_si256(nibbles(block.qs), fifth_bits(block.qh)),
                         _mm256_set1_epi8(16));
}
inline __m256i signed_quants(const BlockIQ4_NL& block) {
  const __m256i table =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues)));
  return _mm256_shuffle_epi8(table, nibbles(block.qs));
}

// The affine types' quants, unsigned (Q4_1 in [0, 15], Q5_1 in [0, 31]): they enter
// maddubs as its unsigned operand directly.
inline __m256i unsigned_quants(const BlockQ4_1& block) {
  return nibbles(block.qs);
}
inline __m256i unsigned_quants(const BlockQ5_1& block) {
  return _mm256_or_si256(nibbles(block.qs), fifth_bits(block.qh));
}

template <class WBlock>
constexpr bool kAffine = std::is_same_v<WBlock, BlockQ4_1> || std::is_same_v<WBlock, BlockQ5_1>;

// One tile of R weight rows x T tokens with two accumulators per output (even blocks ->
// acc0, odd blocks -> acc1, an odd last block -> acc0; result hsum(acc0 + acc1)), so even
// a one-row GEMV has two independent fma chains. Each weight block is unpacked once (w and
// |w| for dot_i8's sign trick, see avx2_util.h) and used for all T tokens.
template <class WBlock, int R, int T>
void gemm_tile(int64_t nb, const uint8_t* w, int64_t w_stride, const uint8_t* a, int64_t a_stride,
               float* y, int64_t ldy) {
  // The loops over R and T are unrolled fully: the accumulators stay in registers, and each
  // row's loads get their own instruction, whose constant stride the prefetcher follows.
  __m256 acc[2][R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[0][r][t] = acc[1][r][t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  auto step = [&](int64_t b, __m256(&acc_b)[R][T]) {
    __m256 da[T];
    [[maybe_unused]] __m256 asum[T];  // affine types: lane i = sum of activations 4i..4i+3
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0& ab = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
      da[t] = _mm256_set1_ps(half_to_float(ab.d));
      if constexpr (kAffine<WBlock>) {
        asum[t] = _mm256_cvtepi32_ps(
            _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), load_q8_0(ab)), ones));
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const WBlock& wb = reinterpret_cast<const WBlock*>(w + r * w_stride)[b];
      const __m256 dw = _mm256_set1_ps(half_to_float(wb.d));
      if constexpr (kAffine<WBlock>) {
        // Pairs of at most 2 x 31 x 128 products: maddubs cannot saturate.
        const __m256i wq = unsigned_quants(wb);
        const __m256 mw = _mm256_set1_ps(half_to_float(wb.m));
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const BlockQ8_0& ab = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
          const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(wq, load_q8_0(ab)), ones);
          acc_b[r][t] =
              _mm256_fmadd_ps(_mm256_mul_ps(dw, da[t]), _mm256_cvtepi32_ps(sums), acc_b[r][t]);
          acc_b[r][t] = _mm256_fmadd_ps(_mm256_mul_ps(mw, da[t]), asum[t], acc_b[r][t]);
        }
      } else {
        const __m256i wq = signed_quants(wb);
        const __m256i aw = _mm256_sign_epi8(wq, wq);
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          const BlockQ8_0& ab = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
          const __m256i sa = _mm256_sign_epi8(load_q8_0(ab), wq);
          const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sa), ones);
          acc_b[r][t] =
              _mm256_fmadd_ps(_mm256_mul_ps(dw, da[t]), _mm256_cvtepi32_ps(sums), acc_b[r][t]);
        }
      }
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    step(b, acc[0]);
    step(b + 1, acc[1]);
  }
  if (b < nb) step(b, acc[0]);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum(_mm256_add_ps(acc[0][r][t], acc[1][r][t]));
}

// All rows for T tokens: single rows for one token (a GEMV streams one row at a time, as
// the prefetcher likes best), 2-row tiles otherwise.
template <class WBlock, int T>
void gemm_rows(int64_t nb, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
               int64_t a_stride, float* y, int64_t ldy) {
  constexpr int kRows = T == 1 ? 1 : T == 4 ? 1 : 2;
  int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) {
    prefetch_page_ahead(w + r * w_stride, static_cast<size_t>(kRows * w_stride));
    gemm_tile<WBlock, kRows, T>(nb, w + r * w_stride, w_stride, a, a_stride, y + r, ldy);
  }
  for (; r < nr; ++r)
    gemm_tile<WBlock, 1, T>(nb, w + r * w_stride, w_stride, a, a_stride, y + r, ldy);
}

// Tokens in groups of 4 form the outer loop, so a group's activation rows stay in L1 while
// the weight rows (a panel the caller sized for L2) stream past.
template <class WBlock>
void gemm_blocks(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  const int64_t nb = n / kQK8_0;
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  int64_t t = 0;
  for (; t + 4 <= nt; t += 4) {
    gemm_rows<WBlock, 4>(nb, wp, w_stride, nr, ap + t * a_stride, a_stride, y + t * ldy, ldy);
  }
  const uint8_t* at = ap + t * a_stride;
  float* yt = y + t * ldy;
  switch (nt - t) {
    case 3:
      gemm_rows<WBlock, 3>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    case 2:
      gemm_rows<WBlock, 2>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    case 1:
      gemm_rows<WBlock, 1>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    default:
      break;
  }
}

template <class WBlock>
float vec_dot_blocks(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  gemm_tile<WBlock, 1, 1>(n / kQK8_0, static_cast<const uint8_t*>(w), 0,
                          static_cast<const uint8_t*>(a), 0, &y, 0);
  return y;
}

// roundf() semantics (ties away from zero) after clamping to [-limit, limit], exactly as
// round_away_clamped() in rounding.h: min/max return the constant for NaN, the fraction
// v - trunc(v) is exact, and +-1 is added when it reaches one half.
inline __m256 round_away_clamped(__m256 v, float limit) {
  v = _mm256_min_ps(v, _mm256_set1_ps(limit));
  v = _mm256_max_ps(v, _mm256_set1_ps(-limit));
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_sub_ps(v, t);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
  const __m256 down = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), one);
  return _mm256_sub_ps(_mm256_add_ps(t, up), down);
}

}  // namespace

float q8_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockQ8_0>(n, w, a);
}

float q4_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockQ4_0>(n, w, a);
}

float q4_1_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockQ4_1>(n, w, a);
}

float q5_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockQ5_0>(n, w, a);
}

float q5_1_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockQ5_1>(n, w, a);
}

float iq4_nl_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<BlockIQ4_NL>(n, w, a);
}

void q4_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockQ4_1>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q5_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockQ5_0>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q5_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockQ5_1>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void iq4_nl_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockIQ4_NL>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockQ8_0>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q4_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<BlockQ4_0>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_0* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* x = src + b * kQK8_0;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])),
                                   _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3])));
    const float amax = hmax(m);
    uint16_t dh = _cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT);
    if (half_to_float(dh) * 127.0f < amax) ++dh;  // as in ref::q8_0_from_float
    const float d = half_to_float(dh);
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = _mm256_cvtps_epi32(round_away_clamped(_mm256_mul_ps(v[k], id), 127.0f));
    }
    blocks[b].d = dh;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs),
                        pack_i32_to_i8(q[0], q[1], q[2], q[3]));
  }
}

}  // namespace strata::kernels::avx2
