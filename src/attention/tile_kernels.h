// The inner loop of paged attention (internal to attention/): folding one K/V tile into
// the online softmax of a group of query rows (the query heads that share a KV head).
//
// Tiles are laid out as KvCache blocks hold them (kv/tile_layout.h): keys transposed and
// values row-major for f32 and f16, both paired for bf16.
//
// The scalar version is the reference; the AVX2 and AVX-512 versions (fold_simd.h) do the
// same arithmetic per lane with a vectorized exp. Each is a pure function with a fixed
// order per query row that does not depend on the other rows of the call, so attention is
// batch- and thread-invariant whichever set runs.
//
// bf16 tiles are computed as bf16 dot products (AVX512_BF16 where the CPU has it): the
// query and the softmax weights p are rounded to bf16 too, products are exact and sums
// are f32. q8_keys and q4_keys tiles (q8_0 and q4_0 caches) score the keys as stored
// against the query quantized to int8 (QueryQ8): each group's dot product is exact integer
// arithmetic (VNNI where the CPU has it), scaled by the two scales; their values are bf16
// tiles. Everywhere else the arithmetic is f32.
#pragma once

#include <cstdint>

namespace strata::attention {

// One fold covers up to this many consecutive KV blocks; each kernel set folds
// TileKernels::fold_blocks of them per call (4 or 8: 64 or 128 keys at the default block
// size). Folding several blocks per call lets each loaded query value feed several key
// vectors (with one 16-key block per call the score loop did as many broadcast loads as
// fmas) and keeps the accumulators in registers for more keys: the AVX-512 fold ran 52%
// faster on 64 keys than on 16 at a prefill group's 128 rows.
constexpr int kMaxFoldBlocks = 8;

// q8_keys / q4_keys: keys as a q8_0 / q4_0 cache stores them (int8 or nibble dimension
// quads and f16 scales, see kv/kv_quant.h), values as bf16 pairs (the cache's values
// dequantized).
enum class TileElem : uint8_t { f32, f16, bf16, q8_keys, q4_keys };

// The query rows of a fold over q8_keys or q4_keys tiles, quantized by quantize_query_q8:
// per row, head_dim int8 elements, and per group of the keys' groups
// (kv_quant::group_size) the scale and the sum of the group's elements (the int8 dot
// product reads keys as unsigned bytes, k + 128 or the q4_0 nibble k + 8; the sum takes
// the offset out again).
struct QueryQ8 {
  const int8_t* q = nullptr;     // n_q rows of head_dim
  const float* scale = nullptr;  // n_q rows of head_dim / group
  const int32_t* sum = nullptr;  // n_q rows of head_dim / group

  QueryQ8 rows_from(int64_t r, int64_t head_dim, int64_t n_groups) const {
    return {q + r * head_dim, scale + r * n_groups, sum + r * n_groups};
  }
};

// Quantizes n_rows rows of head_dim (a multiple of 16) for q8_keys and q4_keys tiles, in
// groups of kv_quant::group_size(head_dim): scale = max|x| / 127, q = x * (127 / max|x|)
// rounded to the nearest integer, ties to even (0 for an all-zero group); NaNs count as 0.
// As llama.cpp quantizes the query for its quantized caches. One implementation, so every
// kernel set sees the same bytes.
void quantize_query_q8(const float* x, int64_t n_rows, int64_t head_dim, int8_t* q, float* scale,
                       int32_t* sum);

struct FoldTile {
  const float* q = nullptr;  // n_q rows of head_dim
  int64_t n_q = 0;
  // The key and value tiles of n_blocks KV blocks, as the cache stores them (elements of
  // type elem, laid out as kv/tile_layout.h says). Together they form one key axis: key j
  // is slot j % block_size of block j / block_size.
  const void* kt[kMaxFoldBlocks] = {};
  const void* v[kMaxFoldBlocks] = {};
  int n_blocks = 1;
  TileElem elem = TileElem::f32;
  int64_t block_size = 0;
  int64_t head_dim = 0;
  int64_t j0 = 0, j1 = 0;  // the keys folded: [j0, j1) of that axis
  // Causal rows (a prefill group's last segment): when rows_per_token > 0, row r folds only
  // keys [j0, j0 + row_keys(r)), its token's own context; rows of one token are adjacent.
  // Every row folds at least one key. A row's result is the same bits as folding it alone
  // with j1 at its own end.
  int64_t rows_per_token = 0;
  int64_t first_row_keys = 0;  // keys of the first token's rows
  float scale = 1.0f;
  QueryQ8 q8;  // q8_keys and q4_keys tiles only: the n_q rows of q, quantized
  // Optional: tiles the caller folds next (n_next of next_bytes each), which the fold
  // prefetches a cache line at a time between its own loads, so that their memory traffic
  // overlaps its arithmetic.
  const void* next[2 * kMaxFoldBlocks] = {};
  int n_next = 0;
  int64_t next_bytes = 0;
  float* max = nullptr;  // n_q running maxima (-inf before the first tile)
  float* sum = nullptr;  // n_q running sums of exp(score - max)
  float* acc = nullptr;  // n_q rows of head_dim: running sum of exp(score - max) * v
  float* p = nullptr;    // scratch: n_q * fold_scratch_row(block_size) floats

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
  // With bf16 tiles, q and every p_j are rounded to bf16 first, the sum adds the rounded
  // p_j, and the reference adds each pair of dimensions (scores) or of slots 2m, 2m+1
  // (values) as the odd term, then the even one; the SIMD folds may order the terms
  // differently.
  void (*fold)(const FoldTile& tile);
  const char* name;
  // Blocks per fold in paged attention (at most kMaxFoldBlocks); segments of this many
  // blocks from position 0 are the same for every token, so results do not depend on the
  // batch. 8 for the AVX-512 sets: prefill at 4K context ran 5-7% faster than with 4 (f16
  // and bf16 caches, fewer folds and softmax passes per key), while the AVX2 set, with
  // half the registers, ran 12% slower with 8.
  int fold_blocks = 4;
};

const TileKernels& reference_tile_kernels();
// The fastest set this CPU runs: AVX-512 with AVX512_BF16, AVX-512, AVX2 or the reference
// (kernels::cpu_kernel_isa(), kernels::cpu_has_avx512_bf16()).
const TileKernels& tile_kernels();

namespace avx2 {
void fold(const FoldTile& tile);
}
namespace avx512 {
void fold(const FoldTile& tile);
}
// The AVX-512 fold, with bf16 tiles computed by AVX512_BF16 dot products.
namespace avx512bf16 {
void fold(const FoldTile& tile);
}

}  // namespace strata::attention
