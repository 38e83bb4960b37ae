// Where a K or V element sits inside one (block, KV head) tile of the KV cache. The cache
// (kv_cache.h) owns whole tiles; write_kv stores elements by these indices and the
// attention folds (attention/tile_kernels.h) read them back by the same ones.
//
// f32 and f16 tiles:
//   keys transposed:  element d of slot j at d * block_size + j  (each key is a column)
//   values row-major: element d of slot j at j * head_dim + d
// Keys as columns make the scores of a query row against a block one chain of
// broadcast-multiply-adds across lanes of keys, with no horizontal sums.
//
// bf16 tiles hold the same elements in pairs, the operand shape of the two-term bf16 dot
// product (AVX512_BF16 vdpbf16ps: lane i += a[2i] b[2i] + a[2i+1] b[2i+1]):
//   keys:   dimensions 2m and 2m+1 of slot j adjacent, at (m * block_size + j) * 2 + d % 2
//   values: slots 2m and 2m+1 of dimension d adjacent, at (m * head_dim + d) * 2 + j % 2
// so one 64-byte load is 16 keys x 2 dimensions (scores) or 16 dimensions x 2 keys
// (values). Needs an even head_dim and block_size.
//
// q8_0 and q4_0 key tiles (kv_quant.h) hold their keys in quads, the operand shape of the
// int8 dot product (AVX-512 VNNI vpdpbusd: lane i += four byte products a[4i..4i+3]
// b[4i..4i+3]): element (d, slot j) at quad_key_index, (m * block_size + j) * 4 + d % 4
// for d in quad m, an int8 (q8_0) or a nibble (q4_0, two to a byte), so one 64-byte load
// is 16 q8_0 keys x 4 dimensions (32 bytes for q4_0). Needs head_dim % 4 == 0.
#pragma once

#include <cstdint>

namespace strata::kv_layout {

inline int64_t key_index(int64_t d, int64_t slot, int64_t block_size) {
  return d * block_size + slot;
}
inline int64_t value_index(int64_t slot, int64_t d, int64_t head_dim) {
  return slot * head_dim + d;
}

inline int64_t bf16_key_index(int64_t d, int64_t slot, int64_t block_size) {
  return ((d >> 1) * block_size + slot) * 2 + (d & 1);
}
inline int64_t bf16_value_index(int64_t slot, int64_t d, int64_t head_dim) {
  return ((slot >> 1) * head_dim + d) * 2 + (slot & 1);
}

inline int64_t quad_key_index(int64_t d, int64_t slot, int64_t block_size) {
  return ((d >> 2) * block_size + slot) * 4 + (d & 3);
}

}  // namespace strata::kv_layout
