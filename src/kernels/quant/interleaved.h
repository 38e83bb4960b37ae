// Conversions into and out of the internal interleaved layouts (blocks.h: BlockQ4_0x16,
// BlockQ8_0x16, BlockQ8_0x16A: whole groups, n (elements) a multiple of kQKX16;
// BlockQ6_Kx16, BlockQ8_Kx16A: whole super-blocks of kQK_K).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/quant/blocks.h"

namespace strata::kernels {

// The layout a weight matrix of `type` with rows of `cols` elements is best repacked into
// on this CPU, or `type` itself when no repacking pays: Q4_0 -> Q4_0_X16 and Q8_0 ->
// Q8_0_X16 where cpu_kernel_isa() has AVX2 (or AVX-512 VNNI) and cols is a multiple of
// kQKX16, and Q4_1, Q5_0, Q5_1, IQ4_NL -> their _X16 layouts likewise; Q6_K, Q4_K, Q5_K,
// IQ4_XS, Q3_K and Q2_K -> Q6_K_X16, Q4_K_X16, Q5_K_X16, IQ4_XS_X16, Q3_K_X16 and Q2_K_X16
// at the same levels (Q4_K, Q5_K, IQ4_XS -> Q4_K_X16P, Q5_K_X16P, IQ4_XS_X16P with AVX-512
// VNNI and whole groups).
DType repacked_weight_type(DType type, int64_t cols);

// Rewrites `rows` rows of `cols` elements from `from` to repacked_weight_type(from, cols)
// in place (the layouts have the same size). Throws strata::Error for any other pair.
void repack_weight_rows(DType from, DType to, void* data, int64_t rows, int64_t cols);

// 16 consecutive blocks <-> one group; pure byte moves, so both directions are exact.
void arrange_q4_0_x16(const BlockQ4_0* src, BlockQ4_0x16* dst);
void unarrange_q4_0_x16(const BlockQ4_0x16& src, BlockQ4_0* dst);
void arrange_q8_0_x16(const BlockQ8_0* src, BlockQ8_0x16* dst);
void unarrange_q8_0_x16(const BlockQ8_0x16& src, BlockQ8_0* dst);
void arrange_q8_0_x16a(const BlockQ8_0* src, BlockQ8_0x16A* dst);
void arrange_q6_k_x16(const BlockQ6_K* src, BlockQ6_Kx16* dst);
void unarrange_q6_k_x16(const BlockQ6_Kx16& src, BlockQ6_K* dst);
void arrange_q4_k_x16(const BlockQ4_K* src, BlockQ4_Kx16* dst);
void unarrange_q4_k_x16(const BlockQ4_Kx16& src, BlockQ4_K* dst);
void arrange_q5_k_x16(const BlockQ5_K* src, BlockQ5_Kx16* dst);
void unarrange_q5_k_x16(const BlockQ5_Kx16& src, BlockQ5_K* dst);
void arrange_iq4_xs_x16(const BlockIQ4_XS* src, BlockIQ4_XSx16* dst);
void unarrange_iq4_xs_x16(const BlockIQ4_XSx16& src, BlockIQ4_XS* dst);
void arrange_q3_k_x16(const BlockQ3_K* src, BlockQ3_Kx16* dst);
void unarrange_q3_k_x16(const BlockQ3_Kx16& src, BlockQ3_K* dst);
void arrange_q3_k_x16s(const BlockQ3_K* src, BlockQ3_Kx16S* dst);
void unarrange_q3_k_x16s(const BlockQ3_Kx16S& src, BlockQ3_K* dst);
void arrange_q8_k_x16a(const BlockQ8_K* src, BlockQ8_Kx16A* dst);
void arrange_q2_k_x16(const BlockQ2_K* src, BlockQ2_Kx16* dst);
void unarrange_q2_k_x16(const BlockQ2_Kx16& src, BlockQ2_K* dst);
void arrange_q4_1_x16(const BlockQ4_1* src, BlockQ4_1x16* dst);
void unarrange_q4_1_x16(const BlockQ4_1x16& src, BlockQ4_1* dst);
void arrange_q5_0_x16(const BlockQ5_0* src, BlockQ5_0x16* dst);
void unarrange_q5_0_x16(const BlockQ5_0x16& src, BlockQ5_0* dst);
void arrange_q5_1_x16(const BlockQ5_1* src, BlockQ5_1x16* dst);
void unarrange_q5_1_x16(const BlockQ5_1x16& src, BlockQ5_1* dst);
void arrange_iq4_nl_x16(const BlockIQ4_NL* src, BlockIQ4_NLx16* dst);
void unarrange_iq4_nl_x16(const BlockIQ4_NLx16& src, BlockIQ4_NL* dst);
// Two Q4_K (Q5_K, IQ4_XS) super-blocks <-> one Q4_K_X16P (Q5_K_X16P, IQ4_XS_X16P) group.
void arrange_q4_k_x16p(const BlockQ4_K* src, BlockQ4_Kx16P* dst);
void unarrange_q4_k_x16p(const BlockQ4_Kx16P& src, BlockQ4_K* dst);
void arrange_q5_k_x16p(const BlockQ5_K* src, BlockQ5_Kx16P* dst);
void unarrange_q5_k_x16p(const BlockQ5_Kx16P& src, BlockQ5_K* dst);
void arrange_iq4_xs_x16p(const BlockIQ4_XS* src, BlockIQ4_XSx16P* dst);
void unarrange_iq4_xs_x16p(const BlockIQ4_XSx16P& src, BlockIQ4_XS* dst);

// A group layout from floats: the file block type's quantizer `quantize` on 16 blocks at
// a time, then `arrange`. For the activations, `quantize` may be any level's
// q8_0_from_float (all give identical bytes).
// (kGroup elements per group: kQKX16, or kQK_K for the one-block K-quant layouts.)
template <class Block, class Group, void (*quantize)(const float*, void*, int64_t),
          void (*arrange)(const Block*, Group*), int64_t kGroup = kQKX16>
void x16_from_float(const float* src, void* dst, int64_t n) {
  auto* groups = static_cast<Group*>(dst);
  Block blocks[kGroup == kQK_K ? 1 : kX16Blocks];
  for (int64_t g = 0; g < n / kGroup; ++g) {
    quantize(src + g * kGroup, blocks, kGroup);
    arrange(blocks, groups + g);
  }
}

// The inverse for the 512-element group layouts: unarrange, then the file block type's
// to_float.
template <class Block, class Group, void (*unarrange)(const Group&, Block*),
          void (*to_float)(const void*, float*, int64_t)>
void x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* groups = static_cast<const Group*>(src);
  Block blocks[kX16Blocks];
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    unarrange(groups[g], blocks);
    to_float(blocks, dst + g * kQKX16, kQKX16);
  }
}

}  // namespace strata::kernels
