// The token loop of the tiled gemm kernels: tiles of 4 tokens, so a tile's activation
// rows stay in L1 while the weight rows (a panel the caller sized for L2) stream past,
// then one tile of the 1-3 tokens left; and the gemm and vec_dot entry points of a row
// kernel built on them.
// Included by kernel files of different instruction sets, so it has internal linkage.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/prefetch.h"
#include "kernels/quant/block_span.h"

namespace strata::kernels {
namespace {

// fn.template operator()<T>(t) for each tile of T tokens starting at token t.
template <class Fn>
inline void for_token_tiles(int64_t n_tokens, Fn&& fn) {
  int64_t t = 0;
  for (; t + 4 <= n_tokens; t += 4) fn.template operator()<4>(t);
  switch (n_tokens - t) {
    case 3:
      fn.template operator()<3>(t);
      break;
    case 2:
      fn.template operator()<2>(t);
      break;
    case 1:
      fn.template operator()<1>(t);
      break;
    default:
      break;
  }
}

// The gemm of a row-tiled kernel: for each tile of T tokens, every row of the panel,
// each by Kernel::tile<T, kPageKick>(n_blocks, weight row, activations of the tile,
// a_stride, y of the row and tile, ldy).
// Every row of the panel for one tile of T tokens. Not inlined: each tile size gets its
// own function and register allocation (inlined, the four sizes shared one function and
// the 4-token loop ran 1.8% slower in a Q4_0 prefill).
template <class Kernel, int T, bool kPageKick>
[[gnu::noinline]] void rows_of_token_tile(int64_t n_blocks, const uint8_t* wp, int64_t w_stride,
                                          int64_t nr, const uint8_t* ap, int64_t a_stride, float* y,
                                          int64_t ldy) {
  for (int64_t r = 0; r < nr; ++r) {
    Kernel::template tile<T, kPageKick>(n_blocks, wp + r * w_stride, ap, a_stride, y + r, ldy);
  }
}

// Row bytes (a 4-token tile's activations and R weight rows) from which a tile or block
// runs over spans of the row, and the span size: on a 32 KB L1 (Zen 4) Q8_0 blocks over
// whole 5632-column rows (28 KB of activations, 12 KB of weights) ran at 75-80% of their
// rate at 2048 columns, every layout at 14336 columns at 70-85%; while Q4_0 at 5632 (34.5
// KB in all) lost 5-8% when split. The plain-AVX2 tile of one row x 4 tokens lost the same
// way (Q4_0_X16 at 8192-14336 columns: 70% of its 2048-column rate; +28-30% with spans,
// Q5_0 / Q8_0 / Q4_K pairs +5-16%). Only kernels that set Kernel::kSplitLongRows are split:
// the AVX-512 lane-scaled K layouts' blocks (Q6_K_X16, Q3_K_X16; ~2x the instructions per
// weight byte) lost 2-6% at 5632-14336 columns, and the AVX2 K layouts' tiles
// (kquant_x16_tile_avx2.h) gained nothing beyond the noise.
constexpr int64_t kSpanFrom = 36 * 1024;
constexpr int64_t kSpanBytes = 24 * 1024;
// Rows of a token tile whose accumulators are carried between spans at a time (64 floats
// a row: an AVX-512 block's 2 rows x 4 tokens x 16 lanes, or an AVX2 tile's 2 halves x 4
// tokens x 8).
constexpr int64_t kCarryRows = 64;
constexpr int64_t kCarryFloatsPerRow = 64;

// How many spans a row takes (1: the whole row) when one pass over it reads row_bytes (a
// token tile's activations and the weight rows beside them).
template <class Kernel>
inline int64_t spans_of_row(int64_t row_bytes) {
  if constexpr (requires { Kernel::kSplitLongRows; }) {
    if (Kernel::kSplitLongRows && row_bytes > kSpanFrom)
      return (row_bytes + kSpanBytes - 1) / kSpanBytes;
  }
  return 1;
}

// rows_of_token_tile for 4-token tiles over rows of n_spans spans: every row of a
// kCarryRows chunk over one span before the next, each row's accumulators carried between
// spans (Kernel::span_tile). The same bits as whole rows.
template <class Kernel, bool kPageKick>
[[gnu::noinline]] void rows_of_token_tile_spans(int64_t n_blocks, int64_t n_spans,
                                                const uint8_t* wp, int64_t w_stride, int64_t nr,
                                                const uint8_t* ap, int64_t a_stride, float* y,
                                                int64_t ldy) {
  const int64_t span_groups = (n_blocks + n_spans - 1) / n_spans;
  alignas(64) float carry[kCarryRows * kCarryFloatsPerRow];
  for (int64_t r0 = 0; r0 < nr; r0 += kCarryRows) {
    const int64_t r1 = std::min(nr, r0 + kCarryRows);
    for (int64_t b0 = 0; b0 < n_blocks; b0 += span_groups) {
      for (int64_t r = r0; r < r1; ++r) {
        const BlockSpan span{b0, std::min(n_blocks, b0 + span_groups), n_blocks,
                             carry + (r - r0) * kCarryFloatsPerRow};
        Kernel::template span_tile<4, kPageKick>(span, wp + r * w_stride, ap, a_stride, y + r, ldy);
      }
    }
  }
}

template <class Kernel, bool kPageKick>
inline void gemm_rows_by_token_tiles(int64_t n_blocks, const void* w, int64_t w_stride, int64_t nr,
                                     const void* a, int64_t a_stride, int64_t nt, float* y,
                                     int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  const int64_t n_spans = spans_of_row<Kernel>(4 * a_stride + w_stride);
  for_token_tiles(nt, [&]<int T>(int64_t t) {
    if constexpr (T == 4 && requires(const BlockSpan& span) {
                    Kernel::template span_tile<4, kPageKick>(span, wp, ap, a_stride, y, ldy);
                  }) {
      if (n_spans > 1) {
        rows_of_token_tile_spans<Kernel, kPageKick>(n_blocks, n_spans, wp, w_stride, nr,
                                                    ap + t * a_stride, a_stride, y + t * ldy, ldy);
        return;
      }
    }
    rows_of_token_tile<Kernel, T, kPageKick>(n_blocks, wp, w_stride, nr, ap + t * a_stride,
                                             a_stride, y + t * ldy, ldy);
  });
}

// A row kernel's gemm entry point: with the page kick.
template <class Kernel>
inline void gemm_by_row_tiles(int64_t n_blocks, const void* w, int64_t w_stride, int64_t nr,
                              const void* a, int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_rows_by_token_tiles<Kernel, true>(n_blocks, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

// The gemm of a kernel that also has a register block of R rows x 4 tokens,
// Kernel::block(span, weight rows (w_stride apart), activations of the 4 tokens, a_stride,
// y of the first row and token, ldy), with R = Kernel::kBlockRows: each weight vector
// feeds 4 tokens and each activation vector R rows, so a block loads about half what R
// separate row tiles do. The rows left over and the last 1-3 tokens go through
// Kernel::tile as in gemm_by_row_tiles. Every output is the same bits either way.
// With `factors` (a kernel that has Kernel::kFactorFloats), each block takes its rows'
// per-group factors from there (kFactorFloats floats per row and group, rows n_blocks
// groups apart), unpacked once for every token tile by Kernel::row_factors.

// A block's rows are split into spans as a tile's (kSpanFrom, kSpanBytes above).
// (The layouts' block functions are [[gnu::noinline]]: inlined into these loops, GCC's
// code for them ran 2-3% slower, Q4_0_X16 and Q8_0_X16 at 5632 x 2048.)

template <class Kernel>
[[gnu::noinline]] void rows_of_token_block(int64_t n_blocks, const uint8_t* wp, int64_t w_stride,
                                           int64_t nr, const uint8_t* ap, int64_t a_stride,
                                           float* y, int64_t ldy, const float* factors = nullptr) {
  constexpr int64_t R = Kernel::kBlockRows;
  static_assert(4 * 16 <= kCarryFloatsPerRow);  // a block's carry in its R rows' share
  const int64_t n_spans = spans_of_row<Kernel>(4 * a_stride + R * w_stride);
  const int64_t span_groups = (n_blocks + n_spans - 1) / n_spans;
  alignas(64) float carry[kCarryRows * kCarryFloatsPerRow];
  const int64_t block_rows = nr / R * R;
  for (int64_t r0 = 0; r0 < block_rows; r0 += kCarryRows) {
    const int64_t r1 = std::min(block_rows, r0 + kCarryRows);
    for (int64_t b0 = 0; b0 < n_blocks; b0 += span_groups) {
      for (int64_t r = r0; r < r1; r += R) {
        const BlockSpan span{b0, std::min(n_blocks, b0 + span_groups), n_blocks,
                             carry + (r - r0) * kCarryFloatsPerRow};
        if constexpr (requires { Kernel::kFactorFloats; }) {
          if (factors != nullptr) {
            Kernel::block_with(span, wp + r * w_stride, w_stride,
                               factors + r * n_blocks * Kernel::kFactorFloats, ap, a_stride, y + r,
                               ldy);
            continue;
          }
        }
        Kernel::block(span, wp + r * w_stride, w_stride, ap, a_stride, y + r, ldy);
      }
    }
  }
  for (int64_t r = block_rows; r < nr; ++r)
    Kernel::template tile<4, false>(n_blocks, wp + r * w_stride, ap, a_stride, y + r, ldy);
}

template <class Kernel>
inline void gemm_by_row_blocks(int64_t n_blocks, const void* w, int64_t w_stride, int64_t nr,
                               const void* a, int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  // Every token tile over rows [r0, r0 + rows), the blocks with `factors` if given.
  auto rows_by_token_tiles = [&](int64_t r0, int64_t rows, const float* factors) {
    for_token_tiles(nt, [&]<int T>(int64_t t) {
      if constexpr (T == 4) {
        rows_of_token_block<Kernel>(n_blocks, wp + r0 * w_stride, w_stride, rows, ap + t * a_stride,
                                    a_stride, y + t * ldy + r0, ldy, factors);
      } else {
        rows_of_token_tile<Kernel, T, true>(n_blocks, wp + r0 * w_stride, w_stride, rows,
                                            ap + t * a_stride, a_stride, y + t * ldy + r0, ldy);
      }
    });
  };
  if constexpr (requires { Kernel::kFactorFloats; }) {
    // Factors unpacked once per row and group for all token tiles, not once per tile: rows
    // in chunks whose factors fit the buffer (a matmul's L2 panel fits one chunk).
    constexpr int64_t kBufferFloats = 32 * 1024;
    const int64_t per_row = n_blocks * Kernel::kFactorFloats;
    if (nt >= 4 && per_row > 0 && per_row * Kernel::kBlockRows <= kBufferFloats) {
      alignas(64) float factors[kBufferFloats];
      const int64_t chunk = kBufferFloats / per_row / Kernel::kBlockRows * Kernel::kBlockRows;
      for (int64_t r0 = 0; r0 < nr; r0 += chunk) {
        const int64_t rows = std::min(chunk, nr - r0);
        Kernel::row_factors(n_blocks, wp + r0 * w_stride, w_stride, rows, factors);
        rows_by_token_tiles(r0, rows, factors);
      }
      return;
    }
  }
  rows_by_token_tiles(0, nr, nullptr);
}

// A row kernel's vec_dot: one row, one token, no page kick.
template <class Kernel>
inline float vec_dot_by_row_tile(int64_t n_blocks, const void* w, const void* a) {
  float y = 0.0f;
  Kernel::template tile<1, false>(n_blocks, static_cast<const uint8_t*>(w),
                                  static_cast<const uint8_t*>(a), 0, &y, 0);
  return y;
}

}  // namespace
}  // namespace strata::kernels
