// AVX-512 VNNI kernels for Q4_0_X16 and Q8_0_X16 weights against Q8_0_X16A activations
// (blocks.h).
//
// Per group of 16 blocks and (row, token): the weights come in as 8 registers of unsigned
// bytes (Q4_0: four 64-byte loads, each split into low and high nibbles; Q8_0: eight
// loads, already unsigned), 8 vpdpbusd accumulate all 16 blocks at once into one int32
// lane per block, starting from -offset * the activation's block sums (which cancels the
// unsigned offset), then one convert, one scale multiply and one fma. About 28
// instructions per 16 blocks against ~100 for the file layouts (legacy_avx512.cpp), which
// lets a GEMV keep up with memory and a GEMM spend most of its time in vpdpbusd. The
// integer lanes are exact and the float steps follow the reference's order
// (ref::q4_0_x16_vec_dot, q8_0_x16_vec_dot), so every output is bit-identical to it,
// whatever the tile, batch or thread split.
// A GEMV runs one row x 1-3 tokens at a time (gemm_tile); a GEMM runs register blocks of
// 2 rows x 4 tokens (gemm_block, gemm_by_row_blocks in token_tiles.h), which load each
// activation vector once for 2 rows and each weight vector once for 4 tokens; its last
// rows and tokens fall back to gemm_tile.
// GCC 12's AVX-512 headers start many intrinsics from _mm512_undefined_*(), which its
// flow analysis reports as uninitialized once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

// One group's weights: q[k] pairs with activation vector k (elements 4k..4k+3 of each block).
struct GroupWeights {
  __m512i q[8];
  __m512 d;
};

// 64 bytes as two 32-byte halves: groups are 288 (Q4_0) or 544 (Q8_0) bytes, so with
// 64-byte loads half the groups' vectors straddle two cache lines, and from DRAM that
// halved a thread's GEMV speed (13 vs 27 GB/s, kernels_matmul_bench matmul_dram). With
// the tensor data 32-byte aligned (GGUF's default alignment; files may choose less) and
// both sizes multiples of 32, the halves never straddle; otherwise they are still correct
// (unaligned loads), only slower.
inline __m512i load64(const uint8_t* p) {
  const auto* h = reinterpret_cast<const __m256i*>(p);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(h)),
                            _mm256_loadu_si256(h + 1), 1);
}

struct Q4x16 {
  using Group = BlockQ4_0x16;
  static constexpr int kOffsetShift = 3;  // nibbles are q + 8
  // gemm_block: one vpdpbusd chain per (row, token); two (even and odd k) measured 10%
  // slower here and 10% faster for Q8_0 (noisy, shared machine).
  static constexpr bool kSplitChains = false;
  static void load(const Group& g, GroupWeights& w) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i v = load64(g.qs + 64 * c);
      w.q[c] = _mm512_and_si512(v, mask);                            // elements 4c..4c+3
      w.q[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);  // 16+4c..16+4c+3
    }
    w.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d)));
  }
  // Weight vector k alone (the block kernel's way: one register at a time).
  static __m512i vec(const Group& g, int k, __m512i mask) {
    const __m512i v = _mm512_loadu_si512(g.qs + 64 * (k % 4));
    return _mm512_and_si512(k < 4 ? v : _mm512_srli_epi16(v, 4), mask);
  }
};

struct Q8x16 {
  using Group = BlockQ8_0x16;
  static constexpr int kOffsetShift = 7;  // quants are stored as q + 128
  static constexpr bool kSplitChains = true;
  static void load(const Group& g, GroupWeights& w) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) w.q[k] = load64(g.qs + 64 * k);
    w.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d)));
  }
  static __m512i vec(const Group& g, int k, __m512i) {
    return _mm512_loadu_si512(g.qs + 64 * k);
  }
};

// acc += (d_w * d_a) * (exact integer dot of each block), lane b = block b.
template <class W>
inline __m512 fold_group(const GroupWeights& w, const BlockQ8_0x16A& a, __m512 acc) {
  // Two chains of 4 dpbusd (integer sums, so the split cannot change the result).
  const __m512i start = _mm512_sub_epi32(
      _mm512_setzero_si512(), _mm512_slli_epi32(_mm512_loadu_si512(a.sum), W::kOffsetShift));
  __m512i lanes = start, odd = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int k = 0; k < 8; k += 2) {
    lanes = _mm512_dpbusd_epi32(lanes, w.q[k], _mm512_loadu_si512(a.qs + 64 * k));
    odd = _mm512_dpbusd_epi32(odd, w.q[k + 1], _mm512_loadu_si512(a.qs + 64 * (k + 1)));
  }
  lanes = _mm512_add_epi32(lanes, odd);
  const __m512 scale = _mm512_mul_ps(w.d, _mm512_loadu_ps(a.d));
  return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc);
}

// One row x T tokens: each group's weights are unpacked once and used for T tokens. With
// kPageKick, each group also starts the hardware prefetcher on the page ahead
// (core/prefetch.h).
template <class W, int T, bool kPageKick>
void gemm_tile(int64_t ng, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
    if constexpr (kPageKick)
      prefetch_page_ahead(w + g * sizeof(typename W::Group), sizeof(typename W::Group));
    GroupWeights wg;
    W::load(reinterpret_cast<const typename W::Group*>(w)[g], wg);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      acc[t] =
          fold_group<W>(wg, reinterpret_cast<const BlockQ8_0x16A*>(a + t * a_stride)[g], acc[t]);
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block): per group and weight vector
// k, the 4 tokens' activation vectors are loaded once and each row's weight vector is
// unpacked once, feeding 4 x kRows independent vpdpbusd chains (one int32 accumulator per
// row and token, started from that token's offset term), then each (row, token) gets its
// convert, scale multiply and fma. Per 8 vpdpbusd that leaves ~2.5 other vector
// instructions (the row tile: ~8, and a load per vpdpbusd). The integer sums and the float
// steps are gemm_tile's, so every output is its bits.
template <class W, int kRows>
void gemm_block(int64_t ng, const uint8_t* w, int64_t w_stride, const uint8_t* a, int64_t a_stride,
                float* y, int64_t ldy) {
  using Group = typename W::Group;
  constexpr int T = 4;
  constexpr bool kSplit = W::kSplitChains;
  const __m512i mask = _mm512_set1_epi8(0x0f);
  __m512 acc[kRows][T];
#pragma GCC unroll 4
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < ng; ++g) {
    const BlockQ8_0x16A* ag[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ag[t] = reinterpret_cast<const BlockQ8_0x16A*>(a + t * a_stride) + g;
    const Group* wg[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) wg[r] = reinterpret_cast<const Group*>(w + r * w_stride) + g;
    __m512i lanes[kRows][T], odd[kRows][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i start =
          _mm512_sub_epi32(_mm512_setzero_si512(),
                           _mm512_slli_epi32(_mm512_loadu_si512(ag[t]->sum), W::kOffsetShift));
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) lanes[r][t] = start, odd[r][t] = _mm512_setzero_si512();
    }
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m512i av[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        av[t] = _mm512_loadu_si512(ag[t]->qs + 64 * k);
        // In a register: folded into each vpdpbusd as a memory operand (GCC's choice),
        // the vector is loaded once per row, and the loads, not the vpdpbusd, set the pace.
        __asm__("" : "+v"(av[t]));
      }
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m512i wv = W::vec(*wg[r], k, mask);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) {
          if (kSplit && k % 2 == 1)
            odd[r][t] = _mm512_dpbusd_epi32(odd[r][t], wv, av[t]);
          else
            lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], wv, av[t]);
        }
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        if (kSplit) lanes[r][t] = _mm512_add_epi32(lanes[r][t], odd[r][t]);
    }
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m512 dw =
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wg[r]->d)));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512 scale = _mm512_mul_ps(dw, _mm512_loadu_ps(ag[t]->d));
        acc[r][t] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes[r][t]), acc[r][t]);
      }
    }
  }
  store_block_sums<kRows, T>(acc, y, ldy);
}

// The row kernel for gemm_rows_by_token_tiles and gemm_by_row_blocks (token_tiles.h).
template <class W>
struct Rows {
  // 2 rows x 4 tokens: 8 (Q8_0: 16) int32 and 8 float accumulators, 4 activation vectors.
  // 3 and 4 rows measured no faster (4 spills float accumulators).
  static constexpr int kBlockRows = 2;
  template <int T, bool kPageKick>
  static void tile(int64_t ng, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<W, T, kPageKick>(ng, w, a, a_stride, y, ldy);
  }
  static void block(int64_t ng, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    gemm_block<W, kBlockRows>(ng, w, w_stride, a, a_stride, y, ldy);
  }
};

}  // namespace

namespace {

// rounding.h's round_away_clamped, 16 lanes (the same steps as the AVX2 version, so NaN
// becomes +limit as there).
inline __m512 round_away_clamped(__m512 v, float limit) {
  v = _mm512_min_ps(v, _mm512_set1_ps(limit));
  v = _mm512_max_ps(v, _mm512_set1_ps(-limit));
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_sub_ps(v, t);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 up =
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ), one);
  const __m512 down =
      _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(frac, _mm512_set1_ps(-0.5f), _CMP_LE_OQ), one);
  return _mm512_sub_ps(_mm512_add_ps(t, up), down);
}

}  // namespace

void q8_0_x16a_from_float(const float* src, void* dst, int64_t n) {
  auto* groups = static_cast<BlockQ8_0x16A*>(dst);
  const __m512i dword_of_block =
      _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120);
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    const float* x = src + g * kQKX16;
    BlockQ8_0x16A& out = groups[g];
    // The 16 blocks' scales at once, one lane per block, by ref::q8_0_from_float's steps.
    alignas(64) float amax[kX16Blocks];
    for (int b = 0; b < kX16Blocks; ++b) {
      const __m512 lo = _mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b));
      const __m512 hi = _mm512_abs_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16));
      amax[b] = _mm512_reduce_max_ps(_mm512_max_ps(lo, hi));
    }
    const __m512 m = _mm512_load_ps(amax);
    __m256i dh = _mm512_cvtps_ph(_mm512_div_ps(m, _mm512_set1_ps(127.0f)),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __mmask16 below = _mm512_cmp_ps_mask(
        _mm512_mul_ps(_mm512_cvtph_ps(dh), _mm512_set1_ps(127.0f)), m, _CMP_LT_OQ);
    dh = _mm256_mask_add_epi16(dh, below, dh, _mm256_set1_epi16(1));  // next half up
    const __m512 d = _mm512_cvtph_ps(dh);
    const __m512 id = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_NEQ_UQ),
                                          _mm512_set1_ps(1.0f), d);
    _mm512_storeu_ps(out.d, d);
    alignas(64) float ids[kX16Blocks];
    _mm512_store_ps(ids, id);
    // Quants block by block, then regrouped: dword k of block b goes to qs[64k + 4b].
    alignas(64) int8_t q[kX16Blocks][kQK8_0];
    for (int b = 0; b < kX16Blocks; ++b) {
      const __m512 s = _mm512_set1_ps(ids[b]);
      for (int h = 0; h < 2; ++h) {
        const __m512 v =
            round_away_clamped(_mm512_mul_ps(_mm512_loadu_ps(x + kQK8_0 * b + 16 * h), s), 127.0f);
        _mm_store_si128(reinterpret_cast<__m128i*>(q[b] + 16 * h),
                        _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(v)));
      }
    }
    __m512i sums = _mm512_setzero_si512();
    for (int k = 0; k < kQK8_0 / 4; ++k) {
      const __m512i lanes =
          _mm512_i32gather_epi32(_mm512_add_epi32(dword_of_block, _mm512_set1_epi32(k)), q, 4);
      _mm512_storeu_si512(out.qs + 64 * k, lanes);
      sums = _mm512_dpbusd_epi32(sums, _mm512_set1_epi8(1), lanes);  // + the 4 signed quants
    }
    _mm512_storeu_si512(out.sum, sums);
  }
}

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows<Q4x16>>(n / kQKX16, w, a);
}
float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows<Q8x16>>(n / kQKX16, w, a);
}

void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows<Q4x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

void q8_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows<Q8x16>>(n / kQKX16, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512
