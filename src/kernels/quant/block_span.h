// The part of a row that one call of a GEMM register block (or an AVX2 row tile) covers.
// A 4-token tile's activations for a long row do not fit L1 beside the weight rows
// streaming past them (Q8_0 at 5632 columns: 4 x 11 groups x 640 bytes = 28 KB of a Zen
// 4's 32 KB), so token_tiles.h hands the blocks and tiles of the layouts that ask for it
// (kSplitLongRows) a row in spans of groups whose activations do fit, every row of the
// panel over one span before the next; the others get the whole row as one span.
#pragma once

#include <cstdint>

namespace strata::kernels {

struct BlockSpan {
  int64_t begin;  // first group of the span
  int64_t end;    // one past its last group
  int64_t n;      // the row's groups
  float* carry;   // the block's kRows x 4 x 16 float accumulators (an AVX2 tile's 2 x 4 x 8)
                  // between spans (64-byte aligned): read unless begin is 0, written
                  // unless end is n
};

}  // namespace strata::kernels
