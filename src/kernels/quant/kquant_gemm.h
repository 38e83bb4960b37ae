// The K-quant GEMM driver shared by the SIMD K-quant files: tokens in groups of 4
// outside, every row of the (L2-sized) panel inside, each (row, token group) one call of
// the file's tile kernel for that many tokens. Internal linkage: the AVX2 and AVX-512
// files include it with different instruction sets, so each keeps its own copy.
// Each row kicks the hardware prefetcher on the page ahead (core/prefetch.h); a row is
// 1-5 KiB at the shapes of Llama-family models, so the kick leads by 2 KiB to 2 KiB + a row.
#pragma once

#include <cstdint>

#include "core/prefetch.h"
#include "kernels/quant/blocks.h"

namespace strata::kernels {
namespace {

template <class WBlock, class Tile1, class Tile2, class Tile3, class Tile4>
void gemm_kquant(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                 int64_t a_stride, int64_t nt, float* y, int64_t ldy, Tile1 tile1, Tile2 tile2,
                 Tile3 tile3, Tile4 tile4) {
  const int64_t nb = n / kQK_K;
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  for (int64_t t = 0; t < nt; t += 4) {
    const int64_t tn = nt - t < 4 ? nt - t : 4;
    const uint8_t* at = ap + t * a_stride;
    for (int64_t r = 0; r < nr; ++r) {
      prefetch_page_ahead(wp + r * w_stride, static_cast<size_t>(w_stride));
      const auto* wr = reinterpret_cast<const WBlock*>(wp + r * w_stride);
      float* yr = y + t * ldy + r;
      switch (tn) {
        case 4:
          tile4(nb, wr, at, a_stride, yr, ldy);
          break;
        case 3:
          tile3(nb, wr, at, a_stride, yr, ldy);
          break;
        case 2:
          tile2(nb, wr, at, a_stride, yr, ldy);
          break;
        default:
          tile1(nb, wr, at, a_stride, yr, ldy);
          break;
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
