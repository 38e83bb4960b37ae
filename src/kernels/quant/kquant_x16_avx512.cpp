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
// is bit-identical to it, whatever the tile, batch or thread split.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see interleaved_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/prefetch.h"
#include "kernels/quant/avx512_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"
#include "kernels/quant/token_tiles.h"

namespace strata::kernels::avx512 {
namespace {

// a | (b & c), bit by bit (the truth table of vpternlogd's operands 0xf0, 0xcc, 0xaa).
constexpr int kOrAnd = 0xf8;

// One row x T tokens: each super-block's quants are unpacked once and used for T tokens.
template <int T, bool kPageKick>
void gemm_tile(int64_t nb, const BlockQ6_Kx16* w, const uint8_t* a, int64_t a_stride, float* y,
               int64_t ldy) {
  const __m512i low4 = _mm512_set1_epi8(0x0f), bits45 = _mm512_set1_epi8(0x30);
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
    const __m512i l0 = _mm512_loadu_si512(wb.ql), l1 = _mm512_loadu_si512(wb.ql + 64);
    const __m512i h = _mm512_loadu_si512(wb.qh);
    // Vector k takes the high 2 bits at bits 2k, 2k+1 of h to bits 4-5 (16-bit shifts: what
    // crosses a byte boundary lands outside bits 4-5 and is masked off).
    __m512i q[4];
    q[0] = _mm512_ternarylogic_epi32(_mm512_and_si512(l0, low4), _mm512_slli_epi16(h, 4), bits45,
                                     kOrAnd);
    q[1] = _mm512_ternarylogic_epi32(_mm512_and_si512(l1, low4), _mm512_slli_epi16(h, 2), bits45,
                                     kOrAnd);
    q[2] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l0, 4), low4), h, bits45,
                                     kOrAnd);
    q[3] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(l1, 4), low4),
                                     _mm512_srli_epi16(h, 2), bits45, kOrAnd);
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

// The row kernel for gemm_rows_by_token_tiles (token_tiles.h).
struct Rows {
  template <int T, bool kPageKick>
  static void tile(int64_t nb, const uint8_t* w, const uint8_t* a, int64_t a_stride, float* y,
                   int64_t ldy) {
    gemm_tile<T, kPageKick>(nb, reinterpret_cast<const BlockQ6_Kx16*>(w), a, a_stride, y, ldy);
  }
};

}  // namespace

float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return vec_dot_by_row_tile<Rows>(n / kQK_K, w, a);
}

void q6_k_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_by_row_tiles<Rows>(n / kQK_K, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512
