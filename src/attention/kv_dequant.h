// Dequantization of quantized KV tiles (kv/kv_quant.h) into the bf16 tile layout the folds
// read (kv/tile_layout.h: values as slot pairs, keys as dimension pairs), one (block, KV
// head) tile at a time into per-thread scratch: paged attention dequantizes only the value
// tiles of the fold it is about to run and folds them as a bf16 cache's (the AVX512_BF16
// dot products where the CPU has them). Key tiles are folded as stored (int8 dot products,
// TileElem::q8_keys / q4_keys): the SIMD versions hand them to the reference, which the
// tests use to check the layout. Half the scratch traffic of f32 tiles: decode at 16K
// context ran slower than with a bf16 cache when the tiles were dequantized to f32.
// Internal to attention/.
//
// Each element is q * scale (one f32 product, rounded once) rounded to bf16 (to nearest,
// ties to even; NaN stays NaN, as fp32_to_bf16). The scalar version is the reference; the
// AVX2 and AVX-512 versions give the same bits.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace strata::attention {

// A key tile (keys = true) or value tile of block_size x head_dim into bf16 elements at
// out: keys at kv_layout::bf16_key_index, values at bf16_value_index. An odd block_size's
// value tile ends with a half pair: its missing slot is written as 0 (see
// dequant_tile_elems).
using DequantTile = void (*)(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                             uint16_t* out);

// Elements one dequantized tile occupies (keys and values alike): block_size rounded up to
// even, times head_dim.
inline int64_t dequant_tile_elems(int64_t block_size, int64_t head_dim) {
  return (block_size + (block_size & 1)) * head_dim;
}

struct KvDequantKernels {
  DequantTile q8_0;
  DequantTile q4_0;  // needs an even block_size
  const char* name;
  // The function of a quantized type (Q8_0 or Q4_0).
  DequantTile of(DType t) const { return t == DType::Q4_0 ? q4_0 : q8_0; }
};

const KvDequantKernels& reference_kv_dequant();
// The fastest set this CPU runs (AVX-512 with AVX512_BF16, AVX-512, AVX2 or the reference).
const KvDequantKernels& kv_dequant();

namespace avx2 {
void dequant_q8_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
}  // namespace avx2
namespace avx512 {
void dequant_q8_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
}  // namespace avx512
namespace avx512bf16 {  // the AVX-512 set, rounding with AVX512_BF16's conversion
void dequant_q8_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                  uint16_t* out);
}  // namespace avx512bf16

}  // namespace strata::attention
