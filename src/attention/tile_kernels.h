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

// One fold covers up to this many consecutive KV blocks (64 keys at the default block
// size). Folding several blocks per call lets each loaded query value feed several key
// vectors (with one 16-key block per call the score loop did as many broadcast loads as
// fmas) and keeps the accumulators in registers for more keys: the AVX-512 fold ran 52%
// faster on 64 keys than on 16 at a prefill group's 128 rows.
constexpr int kMaxFoldBlocks = 4;

struct FoldTile {
  const float* q = nullptr;   // n_q rows of head_dim
  int64_t n_q = 0;
  // The keys (transposed, stride block_size) and values of n_blocks KV blocks, as the cache
  // stores them: float, or IEEE half when f16 is set. Together they form one key axis:
  // key j is slot j % block_size of block j / block_size.
  const void* kt[kMaxFoldBlocks] = {};
  const void* v[kMaxFoldBlocks] = {};
  int n_blocks = 1;
  bool f16 = false;
  int64_t block_size = 0;
  int64_t head_dim = 0;
  int64_t j0 = 0, j1 = 0;     // the keys folded: [j0, j1) of that axis
  // Causal rows (a prefill group's last segment): when rows_per_token > 0, row r folds only
  // keys [j0, j0 + row_keys(r)), its token's own context; rows of one token are adjacent.
  // Every row folds at least one key. A row's result is the same bits as folding it alone
  // with j1 at its own end.
  int64_t rows_per_token = 0;
  int64_t first_row_keys = 0;  // keys of the first token's rows
  float scale = 1.0f;
  float* max = nullptr;       // n_q running maxima (-inf before the first tile)
  float* sum = nullptr;       // n_q running sums of exp(score - max)
  float* acc = nullptr;       // n_q rows of head_dim: running sum of exp(score - max) * v
  float* p = nullptr;         // scratch: n_q * fold_scratch_row(block_size) floats

  int64_t row_keys(int64_t r) const {
    const int64_t n = j1 - j0;
    if (rows_per_token <= 0) return n;
    const int64_t k = first_row_keys + r / rows_per_token;
    return k < n ? k : n;
  }
};

// Scratch row length for FoldTile::p: a fold's keys rounded up to whole 16-lane vectors,
// plus one vector of slack (score vectors are stored whole).
inline int64_t fold_scratch_row(int64_t block_size) {
  return (kMaxFoldBlocks * block_size + 15) / 16 * 16 + 16;
}

struct TileKernels {
  // Per row, over its keys j: scores s_j = (q . k_j) * scale (d summed in order, one
  // chain); m = max(max, max_j s_j); c = exp(max - m); p_j = exp(s_j - m);
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
