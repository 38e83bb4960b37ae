// AVX-512 tile fold (see tile_kernels.h and fold_simd.h): 16 keys per register, which is
// a whole KV block at the default block size.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "attention/avx512_vec.h"
#include "attention/fold_quant_keys.h"
#include "attention/fold_simd.h"
#include "attention/tile_kernels.h"

namespace strata::attention::avx512 {

void fold(const FoldTile& tile) {
  if (tile.elem == TileElem::q8_keys || tile.elem == TileElem::q4_keys)
    return simd::fold_quant_keys_widened<simd::Avx512Vec>(tile);
  simd::fold<simd::Avx512Vec>(tile);
}

}  // namespace strata::attention::avx512
