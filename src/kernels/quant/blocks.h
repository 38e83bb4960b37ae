// Quantized block layouts, bit for bit as GGUF files store them (ggml's ggml-common.h).
// Each struct is one block; a tensor row is an array of blocks. fp16 fields hold raw IEEE
// half bits (see core/fp16.h). All structs are packed by construction (no padding), which
// the static_asserts against the dtype table check.
#pragma once

#include <cstdint>

#include "core/dtype.h"

namespace strata::kernels {

inline constexpr int kQK8_0 = 32;  // elements per Q8_0 / Q4_0 block
inline constexpr int kQK_K = 256;  // elements per K-quant super-block

// value[i] = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;         // fp16 scale
  int8_t qs[kQK8_0];  // quants
};

// value[i] = (q[i] - 8) * d, where q[i] for i < 16 is the low nibble of qs[i] and
// q[i] for i >= 16 is the high nibble of qs[i - 16].
struct BlockQ4_0 {
  uint16_t d;              // fp16 scale
  uint8_t qs[kQK8_0 / 2];  // nibbles
};

// value[i] = d * q[i] + m, with the nibbles q[i] ordered as in Q4_0 (low nibbles are
// elements 0-15, high nibbles 16-31).
struct BlockQ4_1 {
  uint16_t d;              // fp16 scale
  uint16_t m;              // fp16 offset (the block's minimum)
  uint8_t qs[kQK8_0 / 2];  // nibbles
};

// value[i] = (q[i] - 16) * d with 5-bit q[i]: its low 4 bits are the nibble of Q4_0's
// layout and its bit 4 is bit i of qh read as a little-endian uint32.
struct BlockQ5_0 {
  uint16_t d;              // fp16 scale
  uint8_t qh[4];           // bit 4 of each quant
  uint8_t qs[kQK8_0 / 2];  // low 4 bits, as in Q4_0
};

// value[i] = d * q[i] + m, q[i] as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK8_0 / 2];
};

// The 16 levels of IQ4_NL and IQ4_XS (ggml's kvalues_iq4nl): a non-uniform grid, denser
// near zero, that fits the bell-shaped weight distribution better than 16 equal steps.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// value[i] = d * kIQ4NLValues[q[i]], nibbles ordered as in Q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK8_0 / 2];
};

// 16 sub-blocks of 16 elements: value = d * (scales[s] & 15) * q - dmin * (scales[s] >> 4)
// for element i in sub-block s = i / 16, with 2-bit q: element 128h + 32j + l (h < 2,
// j < 4, l < 32) is bits 2j, 2j + 1 of qs[32h + l].
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // 4-bit scale (low) and 4-bit min (high) per sub-block
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  uint16_t d;                  // fp16 super-block scale for the scales
  uint16_t dmin;               // fp16 super-block scale for the mins
};

// 16 sub-blocks of 16 elements: value = d * (sc[s] - 32) * q with q in [-4, 3]. Element i
// = 128h + 32j + l: q = (bits 2j, 2j + 1 of qs[32h + l]) - 4, plus 4 when bit i / 32 of
// hmask[i % 32] is set. The 6-bit sc[s]: low 4 bits are scales[s] & 15 (s < 8) or
// scales[s - 8] >> 4 (s >= 8); high 2 bits are bits 2(s / 4), 2(s / 4) + 1 of scales[8 + s % 4].
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // bit 2 of the biased quants
  uint8_t qs[kQK_K / 4];     // low 2 bits
  uint8_t scales[12];        // 6-bit sub-block scales, biased by 32, packed as above
  uint16_t d;                // fp16 super-block scale
};

// Q4_K plus a fifth bit: q = nibble (as in Q4_K) + 16 * bit, where element 64k + l (l < 32)
// takes bit 2k of qh[l] and element 64k + 32 + l bit 2k + 1. Scales and mins as in Q4_K;
// value = d * sc[j] * q - dmin * m[j] with q in [0, 31].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 8 sub-blocks of 32: value = d * (ls[j] - 32) * kIQ4NLValues[q], where the 6-bit ls[j]
// is nibble j % 2 of scales_l[j / 2] plus bits 2j, 2j + 1 of scales_h as its bits 4-5, and
// sub-block j's nibbles are qs[16j .. 16j + 15] in IQ4_NL's order.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// 8 sub-blocks of 32 elements. Sub-block j has a 6-bit scale sc[j] and 6-bit min m[j]
// packed into `scales` (see unpack in q4_k code):
//   j < 4:  sc = scales[j] & 63,             m = scales[j + 4] & 63
//   j >= 4: sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4),
//           m  = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)
// value = d * sc[j] * q - dmin * m[j]. Elements 64k..64k+31 are the low nibbles of
// qs[32k..32k+31] (sub-block 2k); elements 64k+32..64k+63 the high nibbles (sub-block 2k+1).
struct BlockQ4_K {
  uint16_t d;             // fp16 super-block scale for the sub-block scales
  uint16_t dmin;          // fp16 super-block scale for the sub-block mins
  uint8_t scales[12];     // 6-bit scales and mins, packed as above
  uint8_t qs[kQK_K / 2];  // 4-bit quants
};

// 16 sub-blocks of 16 elements, value = d * scales[i / 16] * (q - 32) with 6-bit q.
// Within each half of 128 elements (ql += 64, qh += 32 per half), for l in [0, 32):
//   q[l]      = (ql[l] & 15)      | ((qh[l] >> 0) & 3) << 4
//   q[l + 32] = (ql[l + 32] & 15) | ((qh[l] >> 2) & 3) << 4
//   q[l + 64] = (ql[l] >> 4)      | ((qh[l] >> 4) & 3) << 4
//   q[l + 96] = (ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits of the quants
  uint8_t qh[kQK_K / 4];      // high 2 bits of the quants
  int8_t scales[kQK_K / 16];  // 8-bit sub-block scales
  uint16_t d;                 // fp16 super-block scale
};

// Activation format for K-quant dot products: value = d * qs[i]; bsums[k] is the sum of
// qs[16k .. 16k+15], which lets the dot product apply sub-block mins without a pass.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

// --- strata-internal layouts (DType::Q4_0_X16 .. Q3_K_X16S in core/dtype.h; never in
// files) ---
//
// Q4_0 and Q8_0 weights regrouped at load, 16 consecutive blocks of a row per group, so
// that one 512-bit vpdpbusd lane serves one block: int32 lane b accumulates block b's
// products while a register of 64 quant bytes holds 4 bytes of each of the 16 blocks. A
// GEMV in the file layout spends about 13 instructions per two blocks on moving quants and
// scales into place; these layouts need about 2 per block (kernels/quant/interleaved_*.cpp).
// Each group has the size of the 16 blocks it replaces, so a row is repacked in place.
inline constexpr int kX16Blocks = 16;
inline constexpr int kQKX16 = kX16Blocks * kQK8_0;  // 512 elements per group

// Q4_0_X16:
//   d[b]              fp16 scale of block b
//   qs[64c + 4b + j]  byte 4c+j of block b's Q4_0 qs (c < 4, j < 4): its low nibble is
//                     element 4c+j of block b, its high nibble element 16+4c+j.
struct BlockQ4_0x16 {
  uint16_t d[kX16Blocks];
  uint8_t qs[kQKX16 / 2];
};

// Q8_0_X16 (544 bytes, accessed through q8_0_x16_d and q8_0_x16_qs):
//   d[b]              fp16 scale of block b
//   qs[64k + 4b + j]  element 4k+j of block b (k < 8, j < 4) plus 128, as an unsigned
//                     byte (the xor with 0x80 that vpdpbusd's unsigned operand needs,
//                     done once at load instead of per use).
// Which of the two comes first depends on where the group lies: d first when the group
// starts 32 bytes or more past a 64-byte boundary (bit 5 of its address set), qs first
// otherwise, so with the tensor 32-byte aligned every quant vector is one whole cache line
// for the AVX-512 kernels' 64-byte loads; a fixed order left every other group's vectors
// straddling two lines (544 is 32 mod 64). The layout is thus tied to the address: a
// repacked tensor is written in place and never moved (a copy by an odd multiple of 32
// bytes would read as another layout).
struct BlockQ8_0x16 {
  uint16_t words[kX16Blocks + kQKX16 / 2];
};
// 32 if the group starts 32 or more bytes past a line (its scales come first), else 0.
inline uintptr_t q8_0_x16_scales_first(const BlockQ8_0x16& g) {
  return reinterpret_cast<uintptr_t>(&g) & 32;
}
inline const uint16_t* q8_0_x16_d(const BlockQ8_0x16& g) {
  return g.words + kQKX16 / 2 - 8 * q8_0_x16_scales_first(g);
}
inline uint16_t* q8_0_x16_d(BlockQ8_0x16& g) {
  return g.words + kQKX16 / 2 - 8 * q8_0_x16_scales_first(g);
}
inline const uint8_t* q8_0_x16_qs(const BlockQ8_0x16& g) {
  return reinterpret_cast<const uint8_t*>(g.words) + q8_0_x16_scales_first(g);
}
inline uint8_t* q8_0_x16_qs(BlockQ8_0x16& g) {
  return reinterpret_cast<uint8_t*>(g.words) + q8_0_x16_scales_first(g);
}

// The other 32-element file types in Q4_0_X16's lane order: 16 consecutive blocks, int32
// lane b = block b, and quant vector k (k < 8) holds elements 4k..4k+3 of each block at
// bytes 4b..4b+3.
//   d[b], m[b]        block b's fp16 scale and (Q4_1, Q5_1) offset
//   qh                (Q5_0, Q5_1) bit k of qh[4b + j] = bit 4 of element 4k + j of block
//                     b: byte n holds the fifth bits of byte n of the 8 quant vectors, so
//                     vector k's are one 16-bit shift and an and away (bit k to bit 4), in
//                     a 64-byte register or in 32-byte halves alike
//   qs                the nibbles as in Q4_0_X16 (IQ4_NL: the grid indices)
// The 64-byte vectors start 32-byte aligned within a group (every field before qs is a
// multiple of 32 bytes), for the two-half loads of interleaved_avx512.cpp.
struct BlockQ4_1x16 {
  uint16_t d[kX16Blocks];
  uint16_t m[kX16Blocks];
  uint8_t qs[kQKX16 / 2];
};
struct BlockQ5_0x16 {
  uint16_t d[kX16Blocks];
  uint8_t qh[kQKX16 / 8];
  uint8_t qs[kQKX16 / 2];
};
struct BlockQ5_1x16 {
  uint16_t d[kX16Blocks];
  uint16_t m[kX16Blocks];
  uint8_t qh[kQKX16 / 8];
  uint8_t qs[kQKX16 / 2];
};
struct BlockIQ4_NLx16 {
  uint16_t d[kX16Blocks];
  uint8_t qs[kQKX16 / 2];
};

// Q4_K_X16P: two consecutive Q4_K super-blocks as one 512-element group in Q4_0_X16's lane
// order, int32 lane b working on the 32 elements of sub-block b % 8 of super-block b / 8
// (quant vector k holds elements 4k..4k+3 of each):
//   head              both super-blocks' d and dmin, then the 16 lanes' 6-bit scales and
//                     their 6-bit mins as two six-bit strings (ref::six_bit_value: one
//                     vpshufb and a shift give 16 lanes, where Q4_K's packing took ~8
//                     instructions and a permute for the two)
//   qs                the nibbles as in Q4_0_X16, lane b = sub-block b
// value = d[b / 8] * sc[b] * q - dmin[b / 8] * m[b]. Against Q8_0_X16A activations (a scale
// and a quant sum per 32 elements) the kernels are Q4_1_X16's, with d x sc and -(dmin x m)
// (both exact in float) as the lanes' scales and offsets: per 512 elements and token one
// convert and two fmas where Q4_K_X16's 16-element lanes need them per 256.
// Q5_K_X16P: the same for Q5_K, with Q5_1_X16's fifth bits:
//   qh                the fifth bits as in Q5_1_X16 (bit k of qh[n]: byte n of vector k)
struct KPairHead {  // the two super-blocks' scales
  uint16_t d[2];
  uint16_t dmin[2];
  uint8_t scales[12];  // six-bit string: lane b's scale sc (sub-block b % 8 of super-block b / 8)
  uint8_t mins[12];    // six-bit string: lane b's min m
};
struct BlockQ4_Kx16P {
  KPairHead head;
  uint8_t qs[kQKX16 / 2];
};
struct BlockQ5_Kx16P {
  KPairHead head;
  uint8_t qh[kQKX16 / 8];
  uint8_t qs[kQKX16 / 2];
};
// IQ4_XS_X16P: the same for IQ4_XS (no mins), with IQ4_NL_X16's grid indices in qs; lane b's
// scale is d[b / 8] x (ls - 32) of its sub-block, the 16 ls one six-bit string as the K
// pairs' scales (IQ4_XS's split 4 + 2 bits took ~15 vector instructions per group, a third
// of the GEMV's; the string takes 4, in the same 16 bytes). With 272-byte groups, qs is
// 32-byte aligned in every other group only (the others' two-half loads straddle lines).
struct IQ4XSPairHead {
  uint16_t d[2];       // the two super-blocks' d
  uint8_t scales[12];  // six-bit string: lane b's ls (sub-block b % 8 of super-block b / 8)
};
struct BlockIQ4_XSx16P {
  IQ4XSPairHead head;
  uint8_t qs[kQKX16 / 2];
};

// The activations both multiply: 16 Q8_0 blocks with their quants in the same lane order,
// plus what the kernels would otherwise recompute for every weight row.
//   qs[64k + 4b + j]  element 4k+j of block b (k < 8, j < 4). Vector k pairs with a
//                     Q8_0_X16 weight vector k, and with the low (k < 4) or high (k >= 4)
//                     nibbles of Q4_0_X16 byte vector k % 4.
//   sum[b]   sum of block b's quants: weights enter vpdpbusd unsigned (q + 8 for Q4_0,
//            q + 128 for Q8_0), and lane b starts from -offset * sum[b] to cancel that
//   d[b]     block b's scale as float (exact: converted from its fp16 scale)
struct BlockQ8_0x16A {
  int8_t qs[kQKX16];
  int32_t sum[kX16Blocks];
  float d[kX16Blocks];
};

// Q8_0_X16AT: the activations of the AMX GEMMs (amx_group_gemm.h), a row layout, not a
// block one: a row of n elements is its n / 512 Q8_0_X16A groups (so every kernel that
// takes Q8_0_X16A reads the row as it is), then the same quants again in block order, block
// j's 32 at bytes 32j.. of that second part: the row of an AMX A tile, which TDPBSSD reads
// straight from the matmul's activations, converted once per matmul instead of once per
// weight panel. 1152 bytes per 512 elements.
inline constexpr int64_t kQ8_0X16ATBytes = sizeof(BlockQ8_0x16A) + kQKX16;

// Q6_K_X16: one Q6_K super-block (16 sub-blocks of 16 elements) with its quants regrouped
// so that int32 lane j of a 512-bit register works on sub-block j: quant vector k (k < 4)
// holds elements 16j + 4k + i (i < 4) of every sub-block j at bytes 4j + i.
//   ql[64c + 4j + i]  (c < 2) low nibble: the low 4 bits of element 16j + 4c + i (vector
//                     c); high nibble: those of element 16j + 4(c + 2) + i (vector c + 2)
//   qh[4j + i]        bits 2k and 2k + 1: the high 2 bits of element 16j + 4k + i
//   scales, d         as in Q6_K (quants biased by 32, value = d * scales[j] * (q - 32))
// The same 210 bytes as the Q6_K block it replaces; the kernels unpack a vector in 3-4
// instructions (AVX-512) and need no per-block horizontal sum (kquant_x16_*.cpp).
struct BlockQ6_Kx16 {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// The activations Q6_K_X16 multiplies: one Q8_K block in the same lane order.
//   qs[64k + 4j + i]  element 16j + 4k + i
//   bias[j]           -32 * the sum of sub-block j's quants: the weights enter vpdpbusd
//                     biased (q + 32), and lane j starts from here to cancel that
//   d                 the block's scale
//   neg_sums          words 4k, 4k + 1 (k < 8): minus the sums of sub-blocks 2k and 2k + 1's
//                     quants, the rest zero; so in the last line (from d) qword k's high
//                     dword holds sub-blocks 2k, 2k + 1 (Q2_K_X16's min term: its kernels
//                     put the lane sums in the low dwords, and one vpmaddwd gives lane 2k
//                     its scale pair and lane 2k + 1 its min pair)
// 6 whole cache lines, so that in a line-aligned buffer no 64-byte load of qs, bias or the
// last line straddles two lines (+13% Q6_K_X16 GEMV in L1).
struct BlockQ8_Kx16A {
  int8_t qs[kQK_K];
  int32_t bias[kQK_K / 16];
  float d;
  int16_t neg_sums[30];
};

// Q4_K_X16: one Q4_K super-block with its quants in the lane order of Q6_K_X16's ql, so
// that int32 lane j (j < 16) works on the 16 elements 16j .. 16j + 15, the half j % 2 of
// Q4_K sub-block j / 2:
//   qs[64c + 4j + i]  (c < 2) low nibble: element 16j + 4c + i (quant vector c); high
//                     nibble: element 16j + 4(c + 2) + i (vector c + 2)
//   d, dmin, scales   as in Q4_K (value = d * sc[j / 2] * q - dmin * m[j / 2])
// The activations are Q8_K_X16A: its bias[j] = -32 * the sum of sub-block j's quants
// carries the min term (the 4-bit quants need no bias, they are unsigned already).
struct BlockQ4_Kx16 {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// Q5_K_X16: Q4_K_X16 with the fifth bits, one bit per element in lane order:
//   qh[8k + n / 8] bit n % 8 (k < 4, n = 4j + i < 64): the high bit of element 16j + 4k + i,
//                     so 64-bit word k is a byte mask of quant vector k (AVX-512BW)
//   d, dmin, scales, qs   as in Q4_K_X16
struct BlockQ5_Kx16 {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// IQ4_XS_X16: one IQ4_XS super-block with its 4-bit grid indices in Q4_K_X16's lane order,
// so that int32 lane j (j < 16) works on elements 16j .. 16j + 15, half j % 2 of IQ4_XS
// sub-block j / 2:
//   qs[64c + 4j + i]  (c < 2) low nibble: the index of element 16j + 4c + i (vector c);
//                     high nibble: that of element 16j + 4(c + 2) + i (vector c + 2)
//   d, scales_h, scales_l   as in IQ4_XS (value = d * (ls[j / 2] - 32) * kIQ4NLValues[q])
// The activations are Q8_K_X16A: the grid values are signed, so the AVX-512 kernel looks up
// value + 128 (unsigned, for vpdpbusd) and starts lane j from 4 * bias[j] = -128 * the
// lane's activation sum, which cancels the +128.
struct BlockIQ4_XSx16 {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// Q3_K_X16: one Q3_K super-block (16 sub-blocks of 16) with its quants in lane order, int32
// lane j working on sub-block j; element 16j + 4k + i (k, i < 4), n = 4j + i:
//   qs[n]             bits 2k, 2k + 1: the low 2 bits of the element (vector k is one
//                     16-bit shift and an and away)
//   hmask[8k + n / 8] bit n % 8: its bit 2, so 64-bit word k is a byte mask of vector k
//   scales            sc[j] (6 bits, as in Q3_K) at bits 6j .. 6j + 5 of the 12 bytes read
//                     as one little-endian bit string, so a kernel gets lane j's scale from
//                     two bytes and one shift (Q3_K's split nibbles and 2-bit fields took ~10
//                     vector instructions per super-block, a third of the GEMV's)
//   d                 as in Q3_K (value = d * (sc[j] - 32) * (low + 4 * bit - 4))
// The activations are Q8_K_X16A: the kernels take low + 4 * bit (unsigned) and start lane j
// from bias[j] / 8 = -4 * the lane's activation sum, which cancels the +4.
// Q3_K_X16S (AVX2 machines): Q3_K_X16 with the bit-2 plane sliced for 32-byte halves:
//   hmask[i]          bit k + 4h: bit 2 of byte 32h + i of quant vector k (i < 32, h < 2),
//                     so vector k's half h is one 16-bit shift and an and away; spreading a
//                     32-bit mask word to 32 bytes took 4 vector instructions per vector and
//                     half. AVX-512 loads Q3_K_X16's 64-bit words straight into mask
//                     registers instead, which this layout would cost a byte test per vector.
// Q2_K_X16: one Q2_K super-block with its 2-bit quants in lane order, int32 lane j working
// on sub-block j; element 16j + 4k + i (k, i < 4), n = 4j + i:
//   qs[n]             bits 2k, 2k + 1: the element's quant (vector k is one 16-bit shift
//                     and an and away)
//   scales, d, dmin   as in Q2_K (value = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4))
// The activations are Q8_K_X16A. The scalar model (ref::q2_k_x16_vec_dot) sums lanes in
// pairs: float lane 2k gets d_w x d_a times the exact int32 sc_2k x sum_2k + sc_2k+1 x
// sum_2k+1, lane 2k + 1 dmin_w x d_a times m_2k x ns_2k + m_2k+1 x ns_2k+1 (ns: the
// activation's neg_sums), so one conversion and one fma serve both terms.
struct BlockQ2_Kx16 {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

struct BlockQ3_Kx16 {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
struct BlockQ3_Kx16S {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

static_assert(sizeof(BlockIQ4_XSx16) == 136);
static_assert(sizeof(BlockQ3_Kx16) == 110);
static_assert(sizeof(BlockQ3_Kx16S) == 110);
static_assert(sizeof(BlockQ2_Kx16) == 84);
static_assert(sizeof(BlockQ4_Kx16P) == 288);
static_assert(sizeof(BlockQ5_Kx16P) == 352);
static_assert(sizeof(BlockIQ4_XSx16P) == 272);
static_assert(sizeof(BlockQ4_Kx16) == 144);
static_assert(sizeof(BlockQ5_Kx16) == 176);
static_assert(sizeof(BlockQ6_Kx16) == 210);
static_assert(sizeof(BlockQ8_Kx16A) == 384);
static_assert(sizeof(BlockQ4_0x16) == 288);
static_assert(sizeof(BlockQ8_0x16) == 544);
static_assert(sizeof(BlockQ4_1x16) == 320);
static_assert(sizeof(BlockQ5_0x16) == 352);
static_assert(sizeof(BlockQ5_1x16) == 384);
static_assert(sizeof(BlockIQ4_NLx16) == 288);
static_assert(sizeof(BlockQ8_0x16A) == 640);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockIQ4_XS) == 136);

// The dtype table (core/dtype.cpp) is not constexpr, so the link between these structs and
// dtype_info() is checked at start-up in traits.cpp and in the tests.

}  // namespace strata::kernels
