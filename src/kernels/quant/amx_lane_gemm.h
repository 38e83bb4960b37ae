// The AMX GEMM of the lane-scaled K layouts (Q6_K_X16, Q3_K_X16: one super-block of 256
// elements per row, int32 lane j working on the 16 elements of sub-block j, each with an
// integer scale and no min) against Q8_K_X16A activations, with every output bit-identical
// to the AVX-512 VNNI kernels (and so to the scalar models ref::q6_k_x16_vec_dot and
// ref::q3_k_x16_vec_dot).
//
// A layout supplies W:
//   using Block;                                              // with an fp16 `d`
//   static void signed_quants(const Block&, __m512i (&q)[4]);  // vector k, lane j: elements
//                                                              // 16j + 4k + i, signed bytes
//   static __m512 lane_scales(const Block&);                   // sub-block j's scale, float
//
// Each sub-block has its own scale, so its integer sums must stay apart: TDPBSSD runs with
// 16-byte A rows (amx_tiles.h's K = 16), 16 tokens x one sub-block's 16 elements by 16
// elements x 16 weight rows. Per call (a matmul panel of weight rows):
//   1. the panel's weights are unpacked once for every token: W::signed_quants' 4 vectors
//      per row and super-block (lane j: elements 16j + 4k .. 16j + 4k + 3 of vector k, as
//      signed bytes) transposed in 16 x 16 dwords into one B tile (4 rows of 64 bytes) per
//      sub-block, and the rows' lane scales (as float) and d transposed alike;
//   2. per 16 tokens, the activations' quants in element order (the A rows: the
//      Q8_K_X16A lane order regrouped by a 4 x 16 dword transpose per super-block) and
//      their scales d;
//   3. per 16-row slab: one TDPBSSD per sub-block, its C tile stored so that each token's
//      rows of every sub-block lie in one run; then per token and super-block one multiply
//      (d_w x d_a over the rows), and per sub-block one convert, one multiply by the lane
//      scale and one fma into the VNNI kernels' lane accumulator j, 16 vectors over the 16
//      rows in registers, and at the end the lanes summed in hsum16's tree.
// The VNNI kernels multiply the lane's integer sum by its scale in int32 and convert, or
// convert both and multiply: |sum x scale| < 2^24, so each is exact and the two agree; the
// fmas are theirs in their order. Tiles is the hardware or the scalar model of the tiles.
// Included by kernel files compiled for AVX-512, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/quant/amx_gemm_common.h"
#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/blocks.h"

namespace strata::kernels::avx512 {
namespace {

constexpr int kAmxLaneK = 16;  // A bytes per row: one sub-block
constexpr int64_t kLanes = kQK_K / 16;

// The panel and activation buffers of one call (AmxArena).
struct AmxLaneBuffers {
  AmxArena<6> arena;
  int8_t* wq;  // [slab][block][sub-block][4 rows x 64 bytes]: the B tiles
  float* ws;   // [slab][block][sub-block][16 rows]: lane scales
  float* wd;   // [slab][block][16 rows]: d
  int8_t* aq;  // [16 tokens][blocks x 256]: the A rows
  float* ad;   // [16 tokens][block]: activation scales
  int32_t* c;  // [16 tokens][block][sub-block][16 rows]: one slab's C tiles
  AmxLaneBuffers(int64_t slabs, int64_t nb)
      : arena({slabs * nb * kLanes * 256, slabs * nb * kLanes * 64, slabs * nb * 64,
               16 * nb * kQK_K, 16 * nb * 4, 16 * nb * kLanes * 64}),
        wq(static_cast<int8_t*>(arena.parts[0])),
        ws(static_cast<float*>(arena.parts[1])),
        wd(static_cast<float*>(arena.parts[2])),
        aq(static_cast<int8_t*>(arena.parts[3])),
        ad(static_cast<float*>(arena.parts[4])),
        c(static_cast<int32_t*>(arena.parts[5])) {}
};

// Step 1 for rows [16 s, 16 s + 16) (rows from nr on: zeros).
template <class W>
void amx_lane_unpack_slab(int64_t nb, const uint8_t* w, int64_t w_stride, int64_t nr, int64_t s,
                          const AmxLaneBuffers& buf) {
  using Block = typename W::Block;
  for (int64_t b = 0; b < nb; ++b) {
    __m512i q[4][16];
    __m512 sc[16];
    alignas(64) float d[16];
    for (int r = 0; r < 16; ++r) {
      const int64_t row = 16 * s + r;
      if (row >= nr) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) q[k][r] = _mm512_setzero_si512();
        sc[r] = _mm512_setzero_ps();
        d[r] = 0.0f;
        continue;
      }
      const Block& block = reinterpret_cast<const Block*>(w + row * w_stride)[b];
      __m512i v[4];
      W::signed_quants(block, v);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) q[k][r] = v[k];
      sc[r] = W::lane_scales(block);
      d[r] = _cvtsh_ss(block.d);
    }
    const int64_t at = s * nb + b;
    int8_t* wq = buf.wq + at * kLanes * 256;
    for (int k = 0; k < 4; ++k) {
      __m512i t[16];
      transpose16_epi32(q[k], t);
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) _mm512_storeu_si512(wq + j * 256 + k * 64, t[j]);
    }
    transpose16_ps(sc, buf.ws + at * kLanes * 16);
    _mm512_store_ps(buf.wd + at * 16, _mm512_load_ps(d));
  }
}

// One super-block of Q8_K_X16A quants (qs[64k + 4j + i]: element 16j + 4k + i) in element
// order: per 128-bit lane L the dwords k of sub-block 4L + c gathered (two unpack levels),
// then the 128-bit lanes transposed 4 x 4 so that sub-blocks 4L .. 4L + 3 fill vector L.
inline void lane_order_to_elements(const int8_t* qs, int8_t* out) {
  __m512i v[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) v[k] = _mm512_loadu_si512(qs + 64 * k);
  const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
  const __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
  const __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
  const __m512i x0 = _mm512_shuffle_i32x4(u0, u1, 0x44), x1 = _mm512_shuffle_i32x4(u2, u3, 0x44);
  const __m512i x2 = _mm512_shuffle_i32x4(u0, u1, 0xee), x3 = _mm512_shuffle_i32x4(u2, u3, 0xee);
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(x0, x1, 0x88));
  _mm512_storeu_si512(out + 64, _mm512_shuffle_i32x4(x0, x1, 0xdd));
  _mm512_storeu_si512(out + 128, _mm512_shuffle_i32x4(x2, x3, 0x88));
  _mm512_storeu_si512(out + 192, _mm512_shuffle_i32x4(x2, x3, 0xdd));
}

// Step 2 for tokens [t0, t0 + 16) of Q8_K_X16A activations (a_stride bytes apart); rows of
// tokens from nt on are zeros.
inline void amx_lane_load_tokens(int64_t nb, const uint8_t* a, int64_t a_stride, int64_t nt,
                                 int64_t t0, const AmxLaneBuffers& buf) {
  const int64_t tokens = std::min<int64_t>(16, nt - t0);
  for (int64_t m = 0; m < 16; ++m) {
    int8_t* row = buf.aq + m * nb * kQK_K;
    if (m >= tokens) {
      std::memset(row, 0, static_cast<size_t>(nb * kQK_K));
      continue;
    }
    const auto* blocks = reinterpret_cast<const BlockQ8_Kx16A*>(a + (t0 + m) * a_stride);
    for (int64_t b = 0; b < nb; ++b) {
      lane_order_to_elements(blocks[b].qs, row + b * kQK_K);
      buf.ad[m * nb + b] = blocks[b].d;
    }
  }
}

// Step 3's integer part for slab s: every sub-block's C tile (16 tokens x 16 rows), two in
// flight, token m's rows of all sub-blocks in one run (the tile stores' stride).
template <class Tiles>
inline void amx_lane_slab_tiles(Tiles& tiles, const AmxLaneBuffers& buf, int64_t s, int64_t nb) {
  const int8_t* wq = buf.wq + s * nb * kLanes * 256;
  const int64_t a_stride = nb * kQK_K, c_stride = nb * kLanes * 64;
  for (int64_t u = 0; u < nb * kLanes; u += 2) {  // u = block x 16 + sub-block
    tiles.template load_a<0>(buf.aq + u * kAmxLaneK, a_stride);
    tiles.template load_b<0>(wq + u * 256);
    tiles.template multiply<0>();
    tiles.template load_a<1>(buf.aq + (u + 1) * kAmxLaneK, a_stride);
    tiles.template load_b<1>(wq + (u + 1) * 256);
    tiles.template multiply<1>();
    tiles.template store_c<0>(buf.c + u * 16, c_stride);
    tiles.template store_c<1>(buf.c + (u + 1) * 16, c_stride);
  }
}

// Step 3's float part for slab s: per token, the VNNI kernels' 16 lane accumulators as
// vectors over the 16 rows, each block's C rows folded in with their steps; then the lanes
// summed in hsum16's tree and the rows that exist stored.
inline void amx_lane_slab_sums(const AmxLaneBuffers& buf, int64_t s, int64_t nb, int64_t nr,
                               int64_t t0, int64_t nt, float* y, int64_t ldy) {
  const int64_t rows = std::min<int64_t>(16, nr - 16 * s);
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  const int64_t tokens = std::min<int64_t>(16, nt - t0);
  const float* ws = buf.ws + s * nb * kLanes * 16;
  const float* wd = buf.wd + s * nb * 16;
  for (int64_t m = 0; m < tokens; ++m) {
    const int32_t* c = buf.c + m * nb * kLanes * 16;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const __m512 scale =
          _mm512_mul_ps(_mm512_load_ps(wd + b * 16), _mm512_set1_ps(buf.ad[m * nb + b]));
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        const int64_t u = b * kLanes + j;
        const __m512 scaled = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + u * 16)),
                                            _mm512_load_ps(ws + u * 16));
        acc[j] = _mm512_fmadd_ps(scale, scaled, acc[j]);
      }
    }
    amx_store_lane_sums(acc, keep, y + (t0 + m) * ldy + 16 * s);
  }
}

// y[t * ldy + r] for nr rows (w_stride bytes apart) of nb super-blocks and nt tokens of
// Q8_K_X16A activations (a_stride bytes apart), through Tiles for every token count. Rows
// beyond kAmxMaxRows go in further calls.
template <class W, class Tiles>
void amx_lane_gemm(int64_t nb, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
                   int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  static_assert(Tiles::kK == kAmxLaneK);
  if (nr <= 0 || nt <= 0) return;
  if (nr > kAmxMaxRows) {
    for (int64_t r0 = 0; r0 < nr; r0 += kAmxMaxRows) {
      amx_lane_gemm<W, Tiles>(nb, w + r0 * w_stride, w_stride, std::min(kAmxMaxRows, nr - r0), a,
                              a_stride, nt, y + r0, ldy);
    }
    return;
  }
  if (nb <= 0) {
    for (int64_t t = 0; t < nt; ++t) std::fill(y + t * ldy, y + t * ldy + nr, 0.0f);
    return;
  }
  const int64_t slabs = (nr + 15) / 16;
  AmxLaneBuffers buf(slabs, nb);
  for (int64_t s = 0; s < slabs; ++s) amx_lane_unpack_slab<W>(nb, w, w_stride, nr, s, buf);
  Tiles tiles;
  tiles.start();
  for (int64_t t0 = 0; t0 < nt; t0 += 16) {
    amx_lane_load_tokens(nb, a, a_stride, nt, t0, buf);
    for (int64_t s = 0; s < slabs; ++s) {
      amx_lane_slab_tiles(tiles, buf, s, nb);
      amx_lane_slab_sums(buf, s, nb, nr, t0, nt, y, ldy);
    }
  }
  tiles.release();
}

}  // namespace

// Defines kernels_avx512.h's name##_gemm_amx (the VNNI gemm name##_gemm below
// kAmxMinTokens) and name##_gemm_amx_emulated for lane-scaled layout W.
#define STRATA_DEFINE_AMX_LANE_GEMMS(name, W)                                                  \
  void name##_gemm_amx(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,  \
                       int64_t a_stride, int64_t nt, float* y, int64_t ldy) {                  \
    if (nt < kAmxMinTokens) return name##_gemm(n, w, w_stride, nr, a, a_stride, nt, y, ldy);   \
    amx_lane_gemm<W, HardwareTilesOf<kAmxLaneK>>(n / kQK_K, static_cast<const uint8_t*>(w),    \
                                                 w_stride, nr, static_cast<const uint8_t*>(a), \
                                                 a_stride, nt, y, ldy);                        \
  }                                                                                            \
  void name##_gemm_amx_emulated(int64_t n, const void* w, int64_t w_stride, int64_t nr,        \
                                const void* a, int64_t a_stride, int64_t nt, float* y,         \
                                int64_t ldy) {                                                 \
    amx_lane_gemm<W, EmulatedTilesOf<kAmxLaneK>>(n / kQK_K, static_cast<const uint8_t*>(w),    \
                                                 w_stride, nr, static_cast<const uint8_t*>(a), \
                                                 a_stride, nt, y, ldy);                        \
  }

}  // namespace strata::kernels::avx512
