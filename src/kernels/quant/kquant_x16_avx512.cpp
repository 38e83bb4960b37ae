// AVX-512 VNNI kernel for Q6_K_X16 weights against Q8_K_X16A activations (blocks.h): the
// classifier of llama.cpp's Q4_0 files, repacked at load.
//
// Per super-block and (row, token): the quants come in as 3 loads (two of low nibbles,
// one of high bits), and each of the 4 quant vectors is one nibble mask (and a shift for
// the high nibbles), one shift of the high bits into bits 4-5 and one vpternlogd that
// merges them; 4 vpdpbusd then give each int32 lane j its sub-block's biased dot product,
// starting from the activation's bias[j] (which cancels the +32), one vpmulld applies the
// sub-block scales, and one convert and one fma accumulate the block, lane by lane. About
// 25 instructions per super-block, against ~50 in the file layout's kernel
// (kquant_avx512.cpp), which spends a third of them on a horizontal sum per block. As the
// classifier of a llama-1b Q4_0 file it took 810 us a token instead of 988 (53.8 MB at
// 66 instead of 54 GB/s). Every
// integer step is exact and the float steps are ref::q6_k_x16_vec_dot's, so each output
// is bit-identical to it, whatever the tile, batch or thread split. A GEMM's full 4-token
// tiles run as register blocks of 2 rows x 4 tokens (gemm_block).
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/amx_lane_gemm.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

// a | (b & c), bit by bit (the truth table of vpternlogd's operands 0xf0, 0xcc, 0xaa).
constexpr int kOrAnd = 0xf8;

// Quant vector k of a block (in [0, 63], biased by 32): the low nibble, and the high 2 bits
// at bits 2k, 2k+1 of h moved to bits 4-5 (16-bit shifts: what crosses a byte boundary
// lands outside bits 4-5 and is masked off).
inline void q6_vecs(const BlockQ6_Kx16& wb, __m512i (&q)[4]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  const __m512i l0 = _mm512_loadu_si512(wb.ql), l1 = _mm512_loadu_si512(wb.ql + 64);
  const __m512i h = _mm512_loadu_si512(wb.qh);
  q[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(l0, low4), _mm512_slli_epi16(h, 4), bits45,
                                   kOrAnd);
  q[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(l1, low4), _mm512_slli_epi16(h, 2), bits45,
                                   kOrAnd);
  q[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), h, bits45,
                                   kOrAnd);
  q[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4),
                                   _mm512_srli_epi16(h, 2), bits45, kOrAnd);
}

// The 16 sub-block scales of a block as float (exact).
inline __m512 q6_scales_f(const BlockQ6_Kx16& wb) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales))));
}

// One row x T tokens: each super-block's quants are unpacked once and used for T tokens.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockQ6_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  __m512 acc[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_Kx16& wb = w[b];
    if constexpr (kPageKick) prefetch_page_ahead(&wb, sizeof(BlockQ6_Kx16));
    // The scales (the block's last bytes) first: from DRAM that made this kernel stream
    // 58-62 GB/s instead of 44-48 (kernels_matmul_bench matmul_dram 5632x2048, where the
    // file layout's kernel, which also reads its scales first, gave 53-59). A block is
    // 210 bytes across 4-5 cache lines, and the load of its last line goes out with the
    // first; an explicit prefetch of the next blocks instead made it slower (46-47).
    const __m512i scales =
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
    const float dw = _cvtsh_ss(wb.d);
    __m512i q[4];
    q6_vecs(wb, q);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const BlockQ8_Kx16A& ab = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride)[b];
      // Two chains of 2 (integer sums, so the split cannot change the result).
      __m512i lanes = _mm512_loadu_si512(ab.bias), odd = _mm512_setzero_si512();
      lanes = _mm512_dpbusd_epi32(lanes, q[0], _mm512_loadu_si512(ab.qs));
      odd = _mm512_dpbusd_epi32(odd, q[1], _mm512_loadu_si512(ab.qs + 64));
      lanes = _mm512_dpbusd_epi32(lanes, q[2], _mm512_loadu_si512(ab.qs + 128));
      odd = _mm512_dpbusd_epi32(odd, q[3], _mm512_loadu_si512(ab.qs + 192));
      const __m512i scaled = _mm512_mullo_epi32(_mm512_add_epi32(lanes, odd), scales);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * ab.d), _mm512_cvtepi32_ps(scaled), acc[t]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) y[t * ldy] = hsum16(acc[t]);
}

// kRows rows x 4 tokens (the prefill GEMM's register block; see kquant_q4_x16_avx512.cpp's):
// per super-block and quant vector k, the 4 tokens' activation vectors are loaded once and
// each row's quant vector is unpacked once, feeding 4 x kRows vpdpbusd chains that start
// from the tokens' biases. The scales are applied in float: a lane's integer sum and its
// scale convert exactly, and their product does too (|32 x 128 x 16 x 128| < 2^24), so
// float(lanes) * float(scales) is float(lanes * scales), gemm_tile's vpmulld and convert,
// bit for bit, in one multiply. The fmas are gemm_tile's, so every output is its bits.
template <int kRows>
[[gnu::noinline]] void gemm_block(const BlockSpan& span, const uint8_t* w, int64_t w_stride,
                                  const uint8_t* a, int64_t a_stride, float* y, int64_t ldy) {
  constexpr int T = 4;
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
  __m512 acc[kRows][T];
  start_block(span, acc);
  // The span's first group at offset 0: the loop as over a whole row.
  w += span.begin * static_cast<int64_t>(sizeof(BlockQ6_Kx16));
  a += span.begin * static_cast<int64_t>(sizeof(BlockQ8_Kx16A));
  const int64_t n_groups = span.end - span.begin;
  for (int64_t b = 0; b < n_groups; ++b) {
    const BlockQ8_Kx16A* ab[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      ab[t] = reinterpret_cast<const BlockQ8_Kx16A*>(a + t * a_stride) + b;
    const BlockQ6_Kx16* wb[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r)
      wb[r] = reinterpret_cast<const BlockQ6_Kx16*>(w + r * w_stride) + b;
    __m512i lanes[kRows][T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const __m512i bias = _mm512_loadu_si512(ab[t]->bias);
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) lanes[r][t] = bias;
    }
    // Each row's 3 quant vectors loaded once, in registers: left to GCC, each shift and
    // mask read its operand from memory (8 loads per row instead of 3), and at 210 bytes a
    // block most of them straddle two cache lines; kernels_matmul_bench tokens:512 ran
    // 390-410 GFLOP/s that way and 425-450 this way (Zen 4).
    __m512i ql[kRows][2], qh[kRows];
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      ql[r][0] = _mm512_loadu_si512(wb[r]->ql);
      ql[r][1] = _mm512_loadu_si512(wb[r]->ql + 64);
      qh[r] = _mm512_loadu_si512(wb[r]->qh);
      __asm__("" : "+v"(ql[r][0]), "+v"(ql[r][1]), "+v"(qh[r]));
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i av[T];
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        av[t] = _mm512_loadu_si512(ab[t]->qs + 64 * k);
        __asm__("" : "+v"(av[t]));  // see interleaved_avx512.cpp's gemm_block
      }
#pragma GCC unroll 4
      for (int r = 0; r < kRows; ++r) {
        const __m512i l = ql[r][k % 2];
        const __m512i h = qh[r];
        const __m512i lo = _mm512_and_si512(k < 2 ? l : _mm512_srli_epi16(l, 4), low4);
        // gemm_tile's shifts of the high bits to bits 4-5 for vector k.
        const __m512i hs = k == 0   ? _mm512_slli_epi16(h, 4)
                           : k == 1 ? _mm512_slli_epi16(h, 2)
                           : k == 2 ? h
                                    : _mm512_srli_epi16(h, 2);
        const __m512i q = _mm512_ternarylogic_epi32(lo, hs, bits45, kOrAnd);
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) lanes[r][t] = _mm512_dpbusd_epi32(lanes[r][t], q, av[t]);
      }
    }
    __m512 ad[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) ad[t] = _mm512_set1_ps(ab[t]->d);
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      const __m512 scales = q6_scales_f(*wb[r]);
      const __m512 dw = _mm512_set1_ps(_cvtsh_ss(wb[r]->d));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(lanes[r][t]), scales);
        acc[r][t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, ad[t]), scaled, acc[r][t]);
      }
    }
  }
  finish_block(span, acc, y, ldy);
}

// The row kernel for gemm_rows_by_token_tiles and gemm_by_row_blocks (token_tiles.h).
struct Rows {
  static constexpr int kBlockRows = 2;
  static void block(const BlockSpan& span, const uint8_t* w, int64_t w_stride, const uint8_t* a,
                    int64_t a_stride, float* y, int64_t ldy) {
    gemm_block<kBlockRows>(span, w, w_stride, a, a_stride, y, ldy);
  }
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ6_Kx16*>(w), a, a_stride, y, ldy);
  }
};

// amx_lane_gemm.h's layout: the quants re-centred (q - 32) and the scales as float.
struct AmxQ6 {
  using Block = BlockQ6_Kx16;
  static void signed_quants(const Block& wb, __m512i (&q)[4]) {
    q6_vecs(wb, q);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) q[k] = _mm512_sub_epi8(q[k], _mm512_set1_epi8(32));
  }
  static __m512 lane_scales(const Block& wb) {
    return q6_scales_f(wb);
  }
};

}  // namespace

float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_blocks<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

STRATA_DEFINE_AMX_LANE_GEMMS(q6_k_x16, AmxQ6)

}  // namespace strata::kernels::avx512
