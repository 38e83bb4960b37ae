// The AMX GEMM of the 512-element group layouts (x16_group_avx512.h's W policies: Q4_0_X16,
// Q8_0_X16, Q4_1/Q5_0/Q5_1/IQ4_NL_X16 and the K pairs) against Q8_0_X16AT activations, with
// every output bit-identical to the AVX-512 VNNI kernels (and so to the scalar models).
//
// TDPBSSD multiplies 16 tokens x 32 bytes (A) by 32 bytes x 16 weight rows (B) into 16 x 16
// int32 (C), one 32-element block at a time: each block has its own scales, so its integer
// sums must stay apart. Per call (a matmul panel of weight rows):
//   1. the panel's weights are unpacked once for every token: W::quants' 8 vectors per row
//      and group (int32 lane b: 4 quants of block b) minus the layout's offset (signed
//      bytes), transposed in 16 x 16 dwords into B tiles of 16 rows per block, and the
//      rows' lane factors (d, and m for layouts with offsets) transposed alike;
//   2. per 16 tokens, the A rows are the activations' own (Q8_0_X16AT, blocks.h: the
//      Q8_0_X16A groups, then the quants in block order, converted once per matmul), and the
//      scales d (and d x sum) per block are gathered per token;
//   3. per 16-row slab: one TDPBSSD per block, its C tile stored so that each token's rows
//      of every block lie in one run; then per token one convert, one multiply and one fma
//      (and the offset's fma) per block into the accumulator of the VNNI kernels' lane
//      b = block % 16, 16 vectors over the 16 rows held in registers, and at the end the
//      16 lanes summed in hsum16's tree.
// The integer sums are exact and each float step is the VNNI kernels' (same operands, same
// order), so the result cannot depend on which path ran. Tiles (amx_tiles.h) is the
// hardware or the scalar model of the tile instructions.
// Step 3's float work bounds the speed: per block and token ~4 instructions (cvt, broadcast,
// mul, fma) where the VNNI kernels spend ~11 (8 vpdpbusd and their 3 float steps). With the
// tile instructions left out (timing only, Zen 5, one thread, 512 tokens), everything else
// ran at 2.3-2.8x the VNNI kernels' GEMM rate for Q8_0 and Q4_0 and 2.0-2.2x for the Q4_K
// pair at the 1B model's shapes: the most an AMX core can gain here if its tiles keep up.
// Included by kernel files compiled for AVX-512, so it has internal linkage.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/quant/amx_gemm_common.h"
#include "kernels/quant/amx_tiles.h"
#include "kernels/quant/x16_group_avx512.h"

namespace strata::kernels::avx512 {
namespace {

// The panel and activation buffers of one call (AmxArena).
struct AmxBuffers {
  AmxArena<7> arena;
  int8_t* wq;  // [slab][block][8 rows x 64 bytes]: the B tiles
  float* wd;   // [slab][block][16 rows]: lane scales
  float* wm;   // [slab][block][16 rows]: lane offsets (layouts with offsets)
  int8_t* aq;  // [16 tokens][blocks x 32]: a last partial tile's A rows
  float* ad;   // [16 tokens][block]: activation scales
  float* as;   // [16 tokens][block]: scale x quant sum
  int32_t* c;  // [16 tokens][block][16 rows]: one slab's C tiles, row m of each C tile
               // in token m's run
  AmxBuffers(int64_t slabs, int64_t nb)
      : arena({slabs * nb * 512, slabs * nb * 64, slabs * nb * 64, 16 * nb * 32, nb * 64, nb * 64,
               nb * 1024}),
        wq(static_cast<int8_t*>(arena.parts[0])),
        wd(static_cast<float*>(arena.parts[1])),
        wm(static_cast<float*>(arena.parts[2])),
        aq(static_cast<int8_t*>(arena.parts[3])),
        ad(static_cast<float*>(arena.parts[4])),
        as(static_cast<float*>(arena.parts[5])),
        c(static_cast<int32_t*>(arena.parts[6])) {}
};

// Step 1 for rows [16 s, 16 s + 16) (rows from nr on: zeros).
template <class W>
void amx_unpack_slab(int64_t ng, const uint8_t* w, int64_t w_stride, int64_t nr, int64_t s,
                     const AmxBuffers& buf) {
  using Group = typename W::Group;
  const int64_t nb = ng * kX16Blocks;
  for (int64_t g = 0; g < ng; ++g) {
    __m512i q[8][16];
    __m512 d[16], m[16];
    for (int r = 0; r < 16; ++r) {
      const int64_t row = 16 * s + r;
      d[r] = m[r] = _mm512_setzero_ps();
      if (row >= nr) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) q[k][r] = _mm512_setzero_si512();
        continue;
      }
      const Group& group = reinterpret_cast<const Group*>(w + row * w_stride)[g];
      __m512i v[8];
      W::quants(group, v);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        q[k][r] =
            W::kOffsetShift < 0
                ? v[k]
                : _mm512_sub_epi8(
                      v[k], _mm512_set1_epi8(static_cast<char>(1 << std::max(W::kOffsetShift, 0))));
      }
      group_factors<W>(group, d[r], m[r]);
    }
    int8_t* wq = buf.wq + (s * nb + g * kX16Blocks) * 512;
    for (int k = 0; k < 8; ++k) {
      __m512i t[16];
      transpose16_epi32(q[k], t);
#pragma GCC unroll 16
      for (int b = 0; b < 16; ++b) _mm512_storeu_si512(wq + b * 512 + k * 64, t[b]);
    }
    transpose16_ps(d, buf.wd + (s * nb + g * kX16Blocks) * 16);
    if constexpr (W::kHasMin) transpose16_ps(m, buf.wm + (s * nb + g * kX16Blocks) * 16);
  }
}

// Where a 16-token tile's A rows lie: row m at rows + m * stride.
struct AmxTokenRows {
  const int8_t* rows;
  int64_t stride;
};

// Step 2 for tokens [t0, t0 + 16) of Q8_0_X16AT activations (a_stride bytes apart): the
// tokens' block scales (and scale x quant sum) in runs per token (only tokens below nt
// are read); the A rows are the activations' own, or for a last tile of fewer than 16
// tokens a zero-padded copy.
template <class W>
AmxTokenRows amx_load_tokens(int64_t ng, const uint8_t* a, int64_t a_stride, int64_t nt, int64_t t0,
                             const AmxBuffers& buf) {
  const int64_t nb = ng * kX16Blocks,
                groups_bytes = ng * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  const int64_t tokens = std::min<int64_t>(16, nt - t0);
  for (int64_t m = 0; m < tokens; ++m) {
    const auto* groups = reinterpret_cast<const BlockQ8_0x16A*>(a + (t0 + m) * a_stride);
    for (int64_t g = 0; g < ng; ++g) {
      const __m512 d = _mm512_loadu_ps(groups[g].d);
      _mm512_store_ps(buf.ad + m * nb + g * kX16Blocks, d);
      if constexpr (W::kHasMin) {
        _mm512_store_ps(buf.as + m * nb + g * kX16Blocks,
                        _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_loadu_si512(groups[g].sum))));
      }
    }
  }
  if (tokens == 16)
    return {reinterpret_cast<const int8_t*>(a + t0 * a_stride + groups_bytes), a_stride};
  for (int64_t m = 0; m < 16; ++m) {
    int8_t* row = buf.aq + m * nb * 32;
    if (m < tokens) {
      std::memcpy(row, a + (t0 + m) * a_stride + groups_bytes, static_cast<size_t>(nb * 32));
    } else {
      std::memset(row, 0, static_cast<size_t>(nb * 32));
    }
  }
  return {buf.aq, nb * 32};
}

// Step 3's integer part for slab s: every block's C tile (16 tokens x 16 rows), two in
// flight, token m's rows of all blocks in one run (the tile stores' stride).
template <class Tiles>
inline void amx_slab_tiles(Tiles& tiles, const AmxBuffers& buf, AmxTokenRows tokens, int64_t s,
                           int64_t nb) {
  const int8_t* wq = buf.wq + s * nb * 512;
  for (int64_t j = 0; j < nb; j += 2) {
    tiles.template load_a<0>(tokens.rows + j * 32, tokens.stride);
    tiles.template load_b<0>(wq + j * 512);
    tiles.template multiply<0>();
    tiles.template load_a<1>(tokens.rows + (j + 1) * 32, tokens.stride);
    tiles.template load_b<1>(wq + (j + 1) * 512);
    tiles.template multiply<1>();
    tiles.template store_c<0>(buf.c + j * 16, nb * 64);
    tiles.template store_c<1>(buf.c + (j + 1) * 16, nb * 64);
  }
}

// Step 3's float part for slab s: per token, the VNNI kernels' 16 lane accumulators (lane
// b: blocks b, b + 16, ...) as vectors over the 16 rows, in registers, each block's C row
// folded in with their steps (fold_group, gemm_block); then the lanes summed in hsum16's
// tree and the rows that exist stored.
template <class W>
void amx_slab_sums(const AmxBuffers& buf, int64_t s, int64_t nb, int64_t nr, int64_t t0, int64_t nt,
                   float* y, int64_t ldy) {
  const int64_t rows = std::min<int64_t>(16, nr - 16 * s);
  const __mmask16 keep = static_cast<__mmask16>((1u << rows) - 1);
  const int64_t tokens = std::min<int64_t>(16, nt - t0);
  const float* wd = buf.wd + s * nb * 16;
  const float* wm = buf.wm + s * nb * 16;
  for (int64_t m = 0; m < tokens; ++m) {
    const int32_t* c = buf.c + m * nb * 16;
    const float* ad = buf.ad + m * nb;
    const float* as = buf.as + m * nb;
    __m512 acc[16];
#pragma GCC unroll 16
    for (int b = 0; b < 16; ++b) acc[b] = _mm512_setzero_ps();
    for (int64_t j0 = 0; j0 < nb; j0 += 16) {
#pragma GCC unroll 16
      for (int b = 0; b < 16; ++b) {
        const int64_t j = j0 + b;
        acc[b] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_load_ps(wd + j * 16), _mm512_set1_ps(ad[j])),
                                 _mm512_cvtepi32_ps(_mm512_load_si512(c + j * 16)), acc[b]);
        if constexpr (W::kHasMin) {
          acc[b] = _mm512_fmadd_ps(_mm512_load_ps(wm + j * 16), _mm512_set1_ps(as[j]), acc[b]);
        }
      }
    }
    amx_store_lane_sums(acc, keep, y + (t0 + m) * ldy + 16 * s);
  }
}

// y[t * ldy + r] for nr rows (w_stride bytes apart) of ng groups and nt tokens of
// Q8_0_X16AT activations (a_stride bytes apart), through Tiles for every token count.
// Rows beyond kAmxMaxRows go in further calls.
template <class W, class Tiles>
void amx_group_gemm(int64_t ng, const uint8_t* w, int64_t w_stride, int64_t nr, const uint8_t* a,
                    int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  if (nr <= 0 || nt <= 0) return;
  if (nr > kAmxMaxRows) {
    for (int64_t r0 = 0; r0 < nr; r0 += kAmxMaxRows) {
      amx_group_gemm<W, Tiles>(ng, w + r0 * w_stride, w_stride, std::min(kAmxMaxRows, nr - r0), a,
                               a_stride, nt, y + r0, ldy);
    }
    return;
  }
  if (ng <= 0) {
    for (int64_t t = 0; t < nt; ++t) std::fill(y + t * ldy, y + t * ldy + nr, 0.0f);
    return;
  }
  const int64_t nb = ng * kX16Blocks, slabs = (nr + 15) / 16;
  AmxBuffers buf(slabs, nb);
  for (int64_t s = 0; s < slabs; ++s) amx_unpack_slab<W>(ng, w, w_stride, nr, s, buf);
  Tiles tiles;
  tiles.start();
  for (int64_t t0 = 0; t0 < nt; t0 += 16) {
    const AmxTokenRows tokens = amx_load_tokens<W>(ng, a, a_stride, nt, t0, buf);
    for (int64_t s = 0; s < slabs; ++s) {
      amx_slab_tiles(tiles, buf, tokens, s, nb);
      amx_slab_sums<W>(buf, s, nb, nr, t0, nt, y, ldy);
    }
  }
  tiles.release();
}

// A layout's GEMM with AMX: the VNNI kernels (Vnni, which read the Q8_0_X16A groups that
// start each Q8_0_X16AT row) below kAmxMinTokens tokens.
template <class W, void (*Vnni)(int64_t, const void*, int64_t, int64_t, const void*, int64_t,
                                int64_t, float*, int64_t)>
void amx_gemm_or_vnni(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                      int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  if (nt < kAmxMinTokens) {
    Vnni(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
    return;
  }
  amx_group_gemm<W, HardwareTiles>(n / kQKX16, static_cast<const uint8_t*>(w), w_stride, nr,
                                   static_cast<const uint8_t*>(a), a_stride, nt, y, ldy);
}

// The same with the tile instructions' scalar model, at every token count (tests).
template <class W>
void amx_gemm_emulated(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                       int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  amx_group_gemm<W, EmulatedTiles>(n / kQKX16, static_cast<const uint8_t*>(w), w_stride, nr,
                                   static_cast<const uint8_t*>(a), a_stride, nt, y, ldy);
}

}  // namespace

// Defines kernels_avx512.h's name##_gemm_amx and name##_gemm_amx_emulated for layout W,
// whose VNNI gemm is name##_gemm.
#define STRATA_DEFINE_AMX_GEMMS(name, W)                                                      \
  void name##_gemm_amx(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a, \
                       int64_t a_stride, int64_t nt, float* y, int64_t ldy) {                 \
    amx_gemm_or_vnni<W, name##_gemm>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);            \
  }                                                                                           \
  void name##_gemm_amx_emulated(int64_t n, const void* w, int64_t w_stride, int64_t nr,       \
                                const void* a, int64_t a_stride, int64_t nt, float* y,        \
                                int64_t ldy) {                                                \
    amx_gemm_emulated<W>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);                        \
  }

}  // namespace strata::kernels::avx512
