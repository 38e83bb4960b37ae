// Quantize-on-write of KV rows into q8_0 / q4_0 tiles (kv/kv_quant.h): the write path
// (write_kv_heads) stores each new token's key and value through these. The references
// are kv_quant::store_q8_0 / store_q4_0; the AVX2 and AVX-512 versions give the same
// bytes (the same max, the same f16 scale, each element one product rounded to the
// nearest integer, ties to even). Internal to attention/.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace strata::attention {

// Quantizes one slot's key (keys = true) or value (head_dim floats at src) into a tile.
using StoreRow = void (*)(uint8_t* tile, bool keys, const float* src, int64_t slot,
                          int64_t block_size, int64_t head_dim);

struct KvQuantizeKernels {
  StoreRow q8_0;
  StoreRow q4_0;
  const char* name;
  StoreRow of(DType t) const { return t == DType::Q4_0 ? q4_0 : q8_0; }
};

const KvQuantizeKernels& reference_kv_quantize();
// The fastest set this CPU runs (AVX-512, AVX2 or the reference).
const KvQuantizeKernels& kv_quantize();

namespace avx2 {
void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd);
void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd);
}  // namespace avx2
namespace avx512 {
void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd);
void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd);
}  // namespace avx512

}  // namespace strata::attention
