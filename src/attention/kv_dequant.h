// Dequantization of quantized KV tiles (kv/kv_quant.h) into the f32 tile layout the folds
// read (kv/tile_layout.h), one (block, KV head) tile at a time into per-thread scratch:
// paged attention dequantizes only the tiles of the fold it is about to run. Internal to
// attention/.
//
// The scalar version is the reference; the AVX2 and AVX-512 versions give the same bits
// (each output is one product q * scale, rounded once).
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace strata::attention {

// A key tile (keys = true) or value tile of block_size x head_dim into f32.
using DequantTile = void (*)(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim,
                             float* out);

struct KvDequantKernels {
  DequantTile q8_0;
  DequantTile q4_0;  // needs an even block_size
  const char* name;
  // The function of a quantized type (Q8_0 or Q4_0).
  DequantTile of(DType t) const { return t == DType::Q4_0 ? q4_0 : q8_0; }
};

const KvDequantKernels& reference_kv_dequant();
// The fastest set this CPU runs (AVX-512, AVX2 or the reference).
const KvDequantKernels& kv_dequant();

namespace avx2 {
void dequant_q8_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim, float* out);
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim, float* out);
}  // namespace avx2
namespace avx512 {
void dequant_q8_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim, float* out);
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t block_size, int64_t head_dim, float* out);
}  // namespace avx512

}  // namespace strata::attention
