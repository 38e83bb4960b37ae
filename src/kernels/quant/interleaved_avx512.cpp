// AVX-512 VNNI kernels for Q4_0_X16 weights against Q8_0_X16 activations (blocks.h).
//
// Per group of 16 blocks and (row, token): four 64-byte weight loads give 8 registers of
// unsigned nibbles (and, shift + and), 8 vpdpbusd accumulate all 16 blocks at once into
// one int32 lane per block (starting from the activation's bias, which cancels the +8
// offset of unsigned nibbles), then one convert, one scale multiply and one fma. About 28
// instructions per 16 blocks against ~100 for the file layout (legacy_avx512.cpp), which
// lets a single-token GEMV keep up with memory bandwidth. The integer lanes are exact and
// the float steps follow ref::q4_0_x16_vec_dot's order, so every output is bit-identical
// to it, whatever the tile, batch or thread split.
// GCC 12's AVX-512 headers start many intrinsics from _mm512_undefined_*(), which its
// flow analysis reports as uninitialized once inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx512.h"

namespace strata::kernels::avx512 {
namespace {

// Lane tree i + 8, + 4, + 2, + 1, as the reference.
inline float hsum16(__m512 acc) {
  const __m256 v = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// One group's weights: q[2c] the low nibbles of chunk c, q[2c + 1] its high nibbles.
struct GroupWeights {
  __m512i q[8];
  __m512 d;
};

// Each 64-byte chunk is loaded as two 32-byte halves: a group is 288 bytes, so with 64-byte
// loads half the groups' chunks straddle two cache lines, and from DRAM that halved a
// thread's GEMV speed (13 vs 27 GB/s, kernels_matmul_bench matmul_dram). Tensor data is
// 32-byte aligned in GGUF files and 288 is a multiple of 32, so the halves never straddle.
inline void load_group(const BlockQ4_0x16& g, GroupWeights& w) {
  const __m512i mask = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m256i* p = reinterpret_cast<const __m256i*>(g.qs + 64 * c);
    const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(p)), _mm256_loadu_si256(p + 1), 1);
    w.q[2 * c] = _mm512_and_si512(v, mask);
    w.q[2 * c + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), mask);
  }
  w.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.d)));
}

// acc += (d_w * d_a) * (exact integer dot of each block), lane b = block b.
inline __m512 fold_group(const GroupWeights& w, const BlockQ8_0x16& a, __m512 acc) {
  // Two chains of 4 dpbusd (integer sums, so the split cannot change the result).
  __m512i lanes = _mm512_loadu_si512(a.bias), odd = _mm512_setzero_si512();
#pragma GCC unroll 4
  for (int k = 0; k < 8; k += 2) {
    lanes = _mm512_dpbusd_epi32(lanes, w.q[k], _mm512_loadu_si512(a.qs + 64 * k));
    odd = _mm512_dpbusd_epi32(odd, w.q[k + 1], _mm512_loadu_si512(a.qs + 64 * (k + 1)));
  }
  lanes = _mm512_add_epi32(lanes, odd);
  const __m512 scale = _mm512_mul_ps(w.d, _mm512_loadu_ps(a.d));
  return _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc);
}

// R rows x T tokens: each group's weights are unpacked once per row and used for T tokens.
template <int R, int T>
void gemm_tile(int64_t ng, const uint8_t* w, int64_t w_stride, const uint8_t* a,
               int64_t a_stride, float* y, int64_t ldy) {
  __m512 acc[R][T];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  for (int64_t g = 0; g < ng; ++g) {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      GroupWeights wg;
      load_group(reinterpret_cast<const BlockQ4_0x16*>(w + r * w_stride)[g], wg);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t)
        acc[r][t] = fold_group(wg, reinterpret_cast<const BlockQ8_0x16*>(a + t * a_stride)[g], acc[r][t]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t * ldy + r] = hsum16(acc[r][t]);
}

template <int T>
void gemm_rows(int64_t ng, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
               int64_t a_stride, float* y, int64_t ldy) {
  for (int64_t r = 0; r < nr; ++r) gemm_tile<1, T>(ng, w + r * w_stride, w_stride, a, a_stride, y + r, ldy);
}

}  // namespace

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  gemm_tile<1, 1>(n / kQKX16, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &y, 0);
  return y;
}

// Tokens in groups of 4 form the outer loop, so a group's activations stay in L1 while the
// weight rows (a panel the caller sized for L2) stream past.
void q4_0_x16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  const int64_t ng = n / kQKX16;
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  int64_t t = 0;
  for (; t + 4 <= nt; t += 4) gemm_rows<4>(ng, wp, w_stride, nr, ap + t * a_stride, a_stride, y + t * ldy, ldy);
  const uint8_t* at = ap + t * a_stride;
  float* yt = y + t * ldy;
  switch (nt - t) {
    case 3: gemm_rows<3>(ng, wp, w_stride, nr, at, a_stride, yt, ldy); break;
    case 2: gemm_rows<2>(ng, wp, w_stride, nr, at, a_stride, yt, ldy); break;
    case 1: gemm_rows<1>(ng, wp, w_stride, nr, at, a_stride, yt, ldy); break;
    default: break;
  }
}

}  // namespace strata::kernels::avx512
