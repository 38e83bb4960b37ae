// The inner loop of paged attention (internal to attention/): folding one K/V tile into
// the online softmax of a group of query rows (the query heads that share a KV head).
//
// Tile layout, as KvCache blocks hold it (see paged_attention.cpp, write_kv):
//   keys transposed:  kt[d * block_size + j]  (each key is a column)
//   values row-major: v[j * head_dim + d]
// Keeping keys as columns makes the scores of one query row against a whole tile a chain
// of broadcast-multiply-adds across lanes of keys, with no horizontal sums.
//
// The scalar version is the reference; the AVX2 and AVX-512 versions (fold_simd.h) do the
// same arithmetic per lane with a vectorized exp. Each is a pure function with a fixed
// order per query row that does not depend on the other rows of the call, so attention is
// batch- and thread-invariant whichever set runs.
#pragma once

#include <cstdint>

namespace strata::attention {

struct FoldTile {
  const float* q = nullptr;   // n_q rows of head_dim
  int64_t n_q = 0;
  // The block's keys, transposed (stride block_size), and values, as the cache stores
  // them: float, or IEEE half when f16 is set (converted lane by lane as they are loaded).
  const void* kt = nullptr;
  const void* v = nullptr;
  bool f16 = false;
  int64_t block_size = 0;
  int64_t head_dim = 0;
  int64_t j0 = 0, j1 = 0;     // the keys folded: slots [j0, j1) of the block
  float scale = 1.0f;
  float* max = nullptr;       // n_q running maxima (-inf before the first tile)
  float* sum = nullptr;       // n_q running sums of exp(score - max)
  float* acc = nullptr;       // n_q rows of head_dim: running sum of exp(score - max) * v
  float* p = nullptr;         // scratch: n_q * padded_block(block_size) floats
};

// Scratch row length for FoldTile::p: block_size rounded up to 16 (whole SIMD vectors).
inline int64_t padded_block(int64_t block_size) {
  return (block_size + 15) / 16 * 16;
}

struct TileKernels {
  // Scores s_j = (q . k_j) * scale for j in [j0, j1) (d summed as two chains, even and odd
  // d, added at the end); m = max(max, max_j s_j); c = exp(max - m); p_j = exp(s_j - m);
  // sum = sum * c + sum_j p_j; acc = acc * c + sum_j p_j v_j (j in order); max = m.
  // exp arguments are clamped at -80 (see exp_clamped in tile_kernels.cpp).
  void (*fold)(const FoldTile& tile);
  const char* name;
};

const TileKernels& reference_tile_kernels();
// The fastest set this CPU runs: AVX-512, AVX2 or the reference (kernels::cpu_kernel_isa()).
const TileKernels& tile_kernels();

namespace avx2 {
void fold(const FoldTile& tile);
}
namespace avx512 {
void fold(const FoldTile& tile);
}

}  // namespace strata::attention
