// AVX-512 VNNI kernels for the 32-element block types (Q8_0, Q4_0, Q5_0, IQ4_NL and the
// affine Q4_1, Q5_1) against Q8_0 activations.
//
// Why they exist: on AVX2 a 32-element block costs about six vector instructions per
// (row, token) (sign, sign, maddubs, madd, convert, multiply-add), which makes a Q4_0 GEMV
// compute-bound well below memory bandwidth and caps prefill. Here one vpdpbusd does the
// 64 multiply-adds of two blocks, and one 512-bit convert / multiply / fma serves both.
//
// vpdpbusd multiplies unsigned by signed bytes, so weights enter as u = q + offset (Q4_0's
// raw nibbles with offset 8; Q8_0's quants xor 0x80, offset 128) and each int32 lane starts
// from -offset * (sum of its 4 activations), computed once per token and block pair. Lane j
// of a block then holds exactly sum(q * a) over elements 4j..4j+3 — the same integer the
// AVX2 kernel's lane j holds. The float part matches the AVX2 reduction too: lanes 0-7 of
// an accumulator play AVX2's acc0 (even blocks), lanes 8-15 its acc1 (odd blocks), an odd
// last block updates lanes 0-7 only, each step is fma(d_w * d_a, float(lanes), acc), and
// the result is AVX2's hsum(acc0 + acc1). So every output equals legacy_avx2.cpp's bit for
// bit (tests/kernels check it), for any tile, batch or thread split.
// Q5_0 enters with offset 16, IQ4_NL as its codebook value + 128 (offset 128). The affine
// types have no offset (their quants are unsigned already) and add AVX2's second step,
// fma(m_w * d_a, asum, acc), with asum lane j = the sum of activations 4j..4j+3.
// GCC 12's AVX-512 headers start many intrinsics from _mm512_undefined_*(), which its
// flow analysis reports as uninitialized once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"

namespace strata::kernels::avx512 {
namespace {

// Two consecutive Q8_0 blocks' quants in one register (bytes 0-31 block b, 32-63 block
// b+1) as u = q + 128.
struct Q8Weights {
  using Block = BlockQ8_0;
  static constexpr bool kAffine = false;
  static __m512i offset() { return _mm512_set1_epi8(static_cast<char>(128)); }
  static __m512i pair(const BlockQ8_0* b);
  static __m512i single(const BlockQ8_0* b) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs));
    return _mm512_zextsi256_si512(_mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(128))));
  }
};

// 128-bit lanes [qs0, qs0, qs1, qs1]: two blocks' nibble bytes, each twice, for nibbles().
inline __m512i two_nibble_blocks(const uint8_t* qs0, const uint8_t* qs1) {
  const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs0)));
  return _mm512_mask_broadcast_i32x4(v, 0xff00,
                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs1)));
}

// Two consecutive Q4_0 blocks' nibbles in element order (low nibbles = elements 0-15, high
// nibbles = 16-31), unsigned: 128-bit lanes [qs_b, qs_b >> 4, qs_b+1, qs_b+1 >> 4] & 0x0f.
struct Q4Weights {
  using Block = BlockQ4_0;
  static constexpr bool kAffine = false;
  static __m512i offset() { return _mm512_set1_epi8(8); }
  static __m512i nibbles(__m512i v) {
    v = _mm512_srlv_epi64(v, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
    return _mm512_and_si512(v, _mm512_set1_epi8(0x0f));
  }
  static __m512i pair(const BlockQ4_0* b) {
    const __m512i v =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)));
    return nibbles(_mm512_mask_broadcast_i32x4(
        v, 0xff00, _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[1].qs))));
  }
  static __m512i single(const BlockQ4_0* b) {
    const __m512i v =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b[0].qs)));
    return _mm512_maskz_mov_epi32(0x00ff, nibbles(v));
  }
};

// Byte i of the result is 0x10 where bit i of the mask is set: the fifth quant bits of
// Q5_0/Q5_1 (bits 0-31 block b, 32-63 block b+1).
inline __m512i fifth_bits(const uint8_t* qh0, const uint8_t* qh1) {
  uint32_t lo, hi = 0;
  __builtin_memcpy(&lo, qh0, 4);
  if (qh1 != nullptr) __builtin_memcpy(&hi, qh1, 4);
  const __mmask64 bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(0x10));
}

// Q5_0: Q4_0's nibbles plus the fifth bits, u = q in [0, 31] (offset 16).
struct Q5Weights {
  using Block = BlockQ5_0;
  static constexpr bool kAffine = false;
  static __m512i offset() { return _mm512_set1_epi8(16); }
  static __m512i pair(const BlockQ5_0* b) {
    return _mm512_or_si512(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[1].qs)),
                           fifth_bits(b[0].qh, b[1].qh));
  }
  static __m512i single(const BlockQ5_0* b) {
    return _mm512_maskz_mov_epi32(
        0x00ff, _mm512_or_si512(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[0].qs)),
                                fifth_bits(b[0].qh, nullptr)));
  }
};

// IQ4_NL: the nibbles mapped through the codebook shifted by +128 (all in [1, 241]).
struct IQ4NLWeights {
  using Block = BlockIQ4_NL;
  static constexpr bool kAffine = false;
  static __m512i offset() { return _mm512_set1_epi8(static_cast<char>(128)); }
  static __m512i lookup(__m512i nibbles) {
    const __m512i table = _mm512_xor_si512(
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues))),
        offset());
    return _mm512_shuffle_epi8(table, nibbles);
  }
  static __m512i pair(const BlockIQ4_NL* b) {
    return lookup(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[1].qs)));
  }
  static __m512i single(const BlockIQ4_NL* b) {
    return _mm512_maskz_mov_epi32(0x00ff,
                                  lookup(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[0].qs))));
  }
};

// Q4_1 / Q5_1: value = d * q + m with unsigned q, which enters vpdpbusd as it is.
struct Q41Weights {
  using Block = BlockQ4_1;
  static constexpr bool kAffine = true;
  static __m512i offset() { return _mm512_setzero_si512(); }
  static __m512i pair(const BlockQ4_1* b) {
    return Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[1].qs));
  }
  static __m512i single(const BlockQ4_1* b) {
    return _mm512_maskz_mov_epi32(0x00ff, Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[0].qs)));
  }
};
struct Q51Weights {
  using Block = BlockQ5_1;
  static constexpr bool kAffine = true;
  static __m512i offset() { return _mm512_setzero_si512(); }
  static __m512i pair(const BlockQ5_1* b) {
    return _mm512_or_si512(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[1].qs)),
                           fifth_bits(b[0].qh, b[1].qh));
  }
  static __m512i single(const BlockQ5_1* b) {
    return _mm512_maskz_mov_epi32(
        0x00ff, _mm512_or_si512(Q4Weights::nibbles(two_nibble_blocks(b[0].qs, b[0].qs)),
                                fifth_bits(b[0].qh, nullptr)));
  }
};

// Weight traits without an offset m (all but the affine ones) read it as zero.
template <class W>
inline uint16_t offset_m(const typename W::Block& b) {
  if constexpr (W::kAffine) {
    return b.m;
  } else {
    (void)b;
    return 0;
  }
}

// Activation quants of blocks b and b+1 (or b alone, upper half zero).
inline __m512i act_pair(const BlockQ8_0* b) {
  const __m512i lo =
      _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs)));
  return _mm512_inserti64x4(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[1].qs)), 1);
}
inline __m512i act_single(const BlockQ8_0* b) {
  return _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b[0].qs)));
}

__m512i Q8Weights::pair(const BlockQ8_0* b) {
  return _mm512_xor_si512(act_pair(b), offset());
}

// 16 floats: fp16 scale d0 in lanes 0-7, d1 in lanes 8-15 (exact conversions).
inline __m512 pair_scale(const uint16_t& d0, const uint16_t& d1) {
  const __m128i h0 = _mm_set1_epi16(static_cast<short>(d0));
  const __m128i h1 = _mm_set1_epi16(static_cast<short>(d1));
  return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1));
}

// -offset * (sum of each 4 activations): the start of every int32 lane, see the top.
template <class W>
inline __m512i offset_correction(__m512i aq) {
  const __m512i zero = _mm512_setzero_si512();
  return _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, W::offset(), aq));
}

// Lane j: the sum of activations 4j..4j+3, as a float (exact), for the affine types.
inline __m512 activation_sums(__m512i aq) {
  return _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), aq));
}

// AVX2's hsum of acc0 + acc1 (legacy_avx2.cpp / avx2_util.h): the same adds in the same
// order, which is avx512_util.h's lane tree.
inline float hsum_halves(__m512 acc) {
  return hsum16(acc);
}

// One tile of R weight rows x T tokens, one accumulator per output. The rows' weights are
// unpacked once per block pair and used for all T tokens; each token's activations, their
// offset correction and scales are prepared once and used for all R rows.
template <class W, int R, int T>
void gemm_tile(int64_t nb, const uint8_t* w, int64_t w_stride, const uint8_t* a, int64_t a_stride,
               float* y, int64_t ldy) {
  using WBlock = typename W::Block;
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  // kPair: blocks b and b+1; otherwise block b alone, updating lanes 0-7 only.
  auto step = [&]<bool kPair>(int64_t b) {
    __m512i wq[R];
    __m512 dw[R];
    [[maybe_unused]] __m512 mw[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const WBlock* wb = reinterpret_cast<const WBlock*>(w + r * w_stride) + b;
      wq[r] = kPair ? W::pair(wb) : W::single(wb);
      dw[r] = pair_scale(wb[0].d, kPair ? wb[1].d : wb[0].d);
      if constexpr (W::kAffine) mw[r] = pair_scale(wb[0].m, kPair ? wb[1].m : wb[0].m);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0* ab = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride) + b;
      const __m512i aq = kPair ? act_pair(ab) : act_single(ab);
      const __m512i corr = offset_correction<W>(aq);
      const __m512 da = pair_scale(ab[0].d, kPair ? ab[1].d : ab[0].d);
      [[maybe_unused]] __m512 asum;
      if constexpr (W::kAffine) asum = activation_sums(aq);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 sums = _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(corr, wq[r], aq));
        const __m512 scale = _mm512_mul_ps(dw[r], da);
        acc[r][t] = kPair ? _mm512_fmadd_ps(scale, sums, acc[r][t])
                          : _mm512_mask3_fmadd_ps(scale, sums, acc[r][t], 0x00ff);
        if constexpr (W::kAffine) {
          const __m512 mscale = _mm512_mul_ps(mw[r], da);
          acc[r][t] = kPair ? _mm512_fmadd_ps(mscale, asum, acc[r][t])
                            : _mm512_mask3_fmadd_ps(mscale, asum, acc[r][t], 0x00ff);
        }
      }
    }
  };
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) step.template operator()<true>(b);
  if (b < nb) step.template operator()<false>(b);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum_halves(acc[r][t]);
}

// A GEMV (one token) with the token's per-pair work done once for all rows: its quants in
// pair form, their offset correction and scales, prepared on the stack (192 bytes per block
// pair, at most kMaxPairs pairs; gemv_rows falls back to gemm_tile beyond). Rows go one at
// a time, which streams the weights in address order as the hardware prefetcher likes best
// (tiles of 2 or 4 interleaved rows measured slower from DRAM). Same operations in the same
// order as gemm_tile<W, 1, 1>, so the same bits.
constexpr int64_t kMaxPairs = 160;

template <class W>
bool gemv_rows(int64_t nb, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
               float* y) {
  using WBlock = typename W::Block;
  const int64_t np = nb / 2;
  if (np > kMaxPairs) return false;
  // The affine types keep the activation sums in corr (their offset correction is zero).
  __m512i aq[kMaxPairs], corr[kMaxPairs];
  __m512 da[kMaxPairs];
  const auto* ab = reinterpret_cast<const BlockQ8_0*>(a);
  for (int64_t p = 0; p < np; ++p) {
    aq[p] = act_pair(ab + 2 * p);
    corr[p] =
        W::kAffine ? _mm512_castps_si512(activation_sums(aq[p])) : offset_correction<W>(aq[p]);
    da[p] = pair_scale(ab[2 * p].d, ab[2 * p + 1].d);
  }
  const __m512i zero = _mm512_setzero_si512();
  for (int64_t r = 0; r < nr; ++r) {
    prefetch_page_ahead(w + r * w_stride, static_cast<size_t>(w_stride));
    const WBlock* wb = reinterpret_cast<const WBlock*>(w + r * w_stride);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t p = 0; p < np; ++p) {
      const __m512i wq = W::pair(wb + 2 * p);
      const __m512 dw = pair_scale(wb[2 * p].d, wb[2 * p + 1].d);
      const __m512 sums =
          _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(W::kAffine ? zero : corr[p], wq, aq[p]));
      acc = _mm512_fmadd_ps(_mm512_mul_ps(dw, da[p]), sums, acc);
      if constexpr (W::kAffine) {
        const __m512 mw = pair_scale(offset_m<W>(wb[2 * p]), offset_m<W>(wb[2 * p + 1]));
        acc = _mm512_fmadd_ps(_mm512_mul_ps(mw, da[p]), _mm512_castsi512_ps(corr[p]), acc);
      }
    }
    if (nb % 2 != 0) {  // the odd last block: lanes 0-7 only, as gemm_tile
      const int64_t b = nb - 1;
      const __m512i q = act_single(ab + b);
      const __m512 sums =
          _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(offset_correction<W>(q), W::single(wb + b), q));
      const __m512 da_b = pair_scale(ab[b].d, ab[b].d);
      const __m512 scale = _mm512_mul_ps(pair_scale(wb[b].d, wb[b].d), da_b);
      acc = _mm512_mask3_fmadd_ps(scale, sums, acc, 0x00ff);
      if constexpr (W::kAffine) {
        const __m512 mw = pair_scale(offset_m<W>(wb[b]), offset_m<W>(wb[b]));
        acc = _mm512_mask3_fmadd_ps(_mm512_mul_ps(mw, da_b), activation_sums(q), acc, 0x00ff);
      }
    }
    y[r] = hsum_halves(acc);
  }
  return true;
}

// All rows for T tokens: 4-row tiles for several tokens (each weight pair unpacked once for
// 4 x T outputs), single rows for one token (see gemv_rows on why).
template <class W, int T>
void gemm_rows(int64_t nb, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
               int64_t a_stride, float* y, int64_t ldy) {
  constexpr int kRows = T == 1 ? 1 : 4;
  int64_t r = 0;
  for (; r + kRows <= nr; r += kRows) {
    prefetch_page_ahead(w + r * w_stride, static_cast<size_t>(kRows * w_stride));
    gemm_tile<W, kRows, T>(nb, w + r * w_stride, w_stride, a, a_stride, y + r, ldy);
  }
  for (; r < nr; ++r) gemm_tile<W, 1, T>(nb, w + r * w_stride, w_stride, a, a_stride, y + r, ldy);
}

// Tokens in groups of 4 form the outer loop, so a group's activation rows stay in L1 while
// the weight rows (a panel the caller sized for L2) stream past.
template <class W>
void gemm_blocks(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  const int64_t nb = n / kQK8_0;
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  int64_t t = 0;
  for (; t + 4 <= nt; t += 4) {
    gemm_rows<W, 4>(nb, wp, w_stride, nr, ap + t * a_stride, a_stride, y + t * ldy, ldy);
  }
  const uint8_t* at = ap + t * a_stride;
  float* yt = y + t * ldy;
  switch (nt - t) {
    case 3:
      gemm_rows<W, 3>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    case 2:
      gemm_rows<W, 2>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    case 1:
      if (!gemv_rows<W>(nb, wp, w_stride, nr, at, yt))
        gemm_rows<W, 1>(nb, wp, w_stride, nr, at, a_stride, yt, ldy);
      break;
    default:
      break;
  }
}

template <class W>
float vec_dot_blocks(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  gemm_tile<W, 1, 1>(n / kQK8_0, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a),
                     0, &y, 0);
  return y;
}

}  // namespace

float q8_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<Q8Weights>(n, w, a);
}

float q4_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<Q4Weights>(n, w, a);
}

float q4_1_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<Q41Weights>(n, w, a);
}

float q5_0_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<Q5Weights>(n, w, a);
}

float q5_1_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<Q51Weights>(n, w, a);
}

float iq4_nl_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_blocks<IQ4NLWeights>(n, w, a);
}

void q4_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<Q41Weights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q5_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<Q5Weights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q5_1_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<Q51Weights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void iq4_nl_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<IQ4NLWeights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<Q8Weights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q4_0_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_blocks<Q4Weights>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512
