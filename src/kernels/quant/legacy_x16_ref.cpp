// Q4_1_X16, Q5_0_X16, Q5_1_X16, IQ4_NL_X16 and the K pairs Q4_K_X16P, Q5_K_X16P and
// IQ4_XS_X16P (blocks.h): the byte moves between them and their file blocks, and the exact scalar
// models of their AVX-512 kernels (legacy_x16_avx512.cpp, x16_group_avx512.h).
//
// The models: lane b of a group is block b's exact integer dot product of the unsigned
// quants (nibble, plus 16 for a set fifth bit; IQ4_NL: grid value + 128) with the
// activation's quants, started from -offset x the activation's block sum (offset 16 for
// Q5_0, 128 for IQ4_NL, none for Q4_1 and Q5_1). The float steps are acc[b] = fma(d_w[b] x
// d_a[b], float(lane), acc[b]), then for Q4_1, Q5_1 and the K pairs acc[b] = fma(m_w[b],
// d_a[b] x float(block sum), acc[b]) (the activation's product, shared by the rows of a GEMM
// block), over the groups, and the 16 lanes added as a tree (i + 8, + 4, + 2, + 1);
// Q4_K_X16P's and Q5_K_X16P's d_w[b] is d x sc and m_w[b] -(dmin x m) of lane b's
// sub-block; IQ4_XS_X16P's d_w[b] is d x (ls - 32), and its lanes are IQ4_NL_X16's. They
// agree with the file layouts' kernels up to float rounding.
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/bit_transpose.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/quant_fit.h"

namespace strata::kernels {
namespace {

// A file block's 16 nibble bytes into group lane b: byte 4c + j goes to qs[64c + 4b + j],
// so that the low nibbles of bytes 64k.. are elements 4k..4k+3 (k < 4) and the high
// nibbles elements 16 + 4k.. (vector k + 4), as in Q4_0_X16.
void put_nibbles(const uint8_t* block_qs, int b, uint8_t* group_qs) {
  for (int c = 0; c < 4; ++c) std::memcpy(group_qs + 64 * c + 4 * b, block_qs + 4 * c, 4);
}
void get_nibbles(const uint8_t* group_qs, int b, uint8_t* block_qs) {
  for (int c = 0; c < 4; ++c) std::memcpy(block_qs + 4 * c, group_qs + 64 * c + 4 * b, 4);
}

// Element e = 4k + j of block b (fifth bit e of its little-endian qh) <-> bit k of group
// qh[n], n = 4b + j: byte n holds the fifth bits of byte n of all 8 quant vectors.
void put_fifth_bits(const uint8_t* block_qh, int b, uint8_t* group_qh) {
  uint32_t qh;
  std::memcpy(&qh, block_qh, sizeof qh);
  // Byte n = 4b + j gathers bits j, j + 4, .., j + 28: three shift-or-mask steps per byte
  // (bit by bit, with a branch on each, this was most of the 4 s a 1B Q5_0 file took to load).
  for (int j = 0; j < 4; ++j) {
    uint32_t x = (qh >> j) & 0x11111111u;
    x = (x | x >> 3) & 0x03030303u;
    x = (x | x >> 6) & 0x000F000Fu;
    x = (x | x >> 12) & 0xFFu;
    group_qh[4 * b + j] = static_cast<uint8_t>(group_qh[4 * b + j] | x);
  }
}
void get_fifth_bits(const uint8_t* group_qh, int b, uint8_t* block_qh) {
  uint32_t qh = 0;
  for (int e = 0; e < kQK8_0; ++e) {
    const int n = 4 * b + e % 4;
    qh |= static_cast<uint32_t>((group_qh[n] >> (e / 4)) & 1) << e;
  }
  std::memcpy(block_qh, &qh, sizeof qh);
}

// The unsigned quant of element 4k + j of block b in a group: its nibble, plus 16 where a
// fifth-bit mask is given and set.
int group_quant(const uint8_t* qs, const uint8_t* qh, int k, int b, int j) {
  const int n = 4 * b + j;
  int q = (qs[64 * (k % 4) + n] >> (4 * (k / 4))) & 15;
  if (qh != nullptr) q += 16 * ((qh[n] >> k) & 1);
  return q;
}

// Lane b's scale d_w and offset m_w of a K pair: d x sc and -(dmin x m) of its sub-block.
struct KPairFactors {
  template <class Group>
  void operator()(const Group& g, int b, float* d, float* m) const {
    const int sc = ref::six_bit_value(g.head.scales, b), mn = ref::six_bit_value(g.head.mins, b);
    *d = fp16_to_fp32(g.head.d[b / 8]) * static_cast<float>(sc);
    *m = -(fp16_to_fp32(g.head.dmin[b / 8]) * static_cast<float>(mn));
  }
};

// Lane b's scale d x (ls - 32) of an IQ4_XS pair.
struct Iq4XsPairFactors {
  void operator()(const BlockIQ4_XSx16P& g, int b, float* d, float*) const {
    *d = fp16_to_fp32(g.head.d[b / 8]) *
         static_cast<float>(ref::six_bit_value(g.head.scales, b) - 32);
  }
};

// Lane b's scale d_w and offset m_w: the group's fp16 d[b] and m[b] (those that have them).
struct HalfFactors {
  template <class Group>
  void operator()(const Group& g, int b, float* d, float* m) const {
    *d = fp16_to_fp32(g.d[b]);
    if constexpr (requires { g.m; }) *m = fp16_to_fp32(g.m[b]);
  }
};

// The models' float steps (see the top) over `lane(g, b)`, the exact integer lanes.
template <class Group, bool kHasMin, class Lane, class Factors = HalfFactors>
float reduce_groups(int64_t n, const void* w, const void* a, Lane lane, Factors factors = {}) {
  const auto* wg = static_cast<const Group*>(w);
  const auto* ag = static_cast<const BlockQ8_0x16A*>(a);
  float acc[kX16Blocks] = {};
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    for (int b = 0; b < kX16Blocks; ++b) {
      const float ad = ag[g].d[b];
      float dw = 0.0f, mw = 0.0f;
      factors(wg[g], b, &dw, &mw);
      acc[b] = std::fma(dw * ad, static_cast<float>(lane(wg[g], ag[g], b)), acc[b]);
      if constexpr (kHasMin) acc[b] = std::fma(mw, ad * static_cast<float>(ag[g].sum[b]), acc[b]);
    }
  }
  for (int width = kX16Blocks / 2; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

// Lane b: -offset x the block sum + the unsigned quants' dot product with the activations;
// `value` maps a group_quant to the unsigned value the kernel multiplies.
template <class Value>
int32_t group_lane(const uint8_t* qs, const uint8_t* qh, int offset, const BlockQ8_0x16A& a, int b,
                   Value value) {
  int32_t lane = -offset * a.sum[b];
  for (int k = 0; k < 8; ++k) {
    for (int j = 0; j < 4; ++j)
      lane += value(group_quant(qs, qh, k, b, j)) * a.qs[64 * k + 4 * b + j];
  }
  return lane;
}

int identity(int q) {
  return q;
}

}  // namespace

void arrange_q4_1_x16(const BlockQ4_1* src, BlockQ4_1x16* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst->d[b] = src[b].d, dst->m[b] = src[b].m;
    put_nibbles(src[b].qs, b, dst->qs);
  }
}
void unarrange_q4_1_x16(const BlockQ4_1x16& src, BlockQ4_1* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = src.d[b], dst[b].m = src.m[b];
    get_nibbles(src.qs, b, dst[b].qs);
  }
}

void arrange_q5_0_x16(const BlockQ5_0* src, BlockQ5_0x16* dst) {
  std::memset(dst->qh, 0, sizeof dst->qh);
  for (int b = 0; b < kX16Blocks; ++b) {
    dst->d[b] = src[b].d;
    put_nibbles(src[b].qs, b, dst->qs);
    put_fifth_bits(src[b].qh, b, dst->qh);
  }
}
void unarrange_q5_0_x16(const BlockQ5_0x16& src, BlockQ5_0* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = src.d[b];
    get_nibbles(src.qs, b, dst[b].qs);
    get_fifth_bits(src.qh, b, dst[b].qh);
  }
}

void arrange_q5_1_x16(const BlockQ5_1* src, BlockQ5_1x16* dst) {
  std::memset(dst->qh, 0, sizeof dst->qh);
  for (int b = 0; b < kX16Blocks; ++b) {
    dst->d[b] = src[b].d, dst->m[b] = src[b].m;
    put_nibbles(src[b].qs, b, dst->qs);
    put_fifth_bits(src[b].qh, b, dst->qh);
  }
}
void unarrange_q5_1_x16(const BlockQ5_1x16& src, BlockQ5_1* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = src.d[b], dst[b].m = src.m[b];
    get_nibbles(src.qs, b, dst[b].qs);
    get_fifth_bits(src.qh, b, dst[b].qh);
  }
}

// Sub-block s (32 elements) of a Q4_K super-block's qs <-> the 16 nibble bytes of a Q4_0
// block (byte i: element i low, element 16 + i high), the shape put_nibbles places.
void q4_k_sub_block_to_nibbles(const uint8_t* q4_k_qs, int s, uint8_t* nibbles) {
  const uint8_t* qs = q4_k_qs + 32 * (s / 2);
  const int shift = 4 * (s % 2);
  constexpr uint64_t kLow4 = 0x0F0F0F0F0F0F0F0FULL;
  for (int h = 0; h < 2; ++h) {  // 8 bytes at a time
    uint64_t lo, hi;
    std::memcpy(&lo, qs + 8 * h, 8);
    std::memcpy(&hi, qs + 16 + 8 * h, 8);
    const uint64_t out = ((lo >> shift) & kLow4) | ((hi >> shift) & kLow4) << 4;
    std::memcpy(nibbles + 8 * h, &out, 8);
  }
}
void nibbles_to_q4_k_sub_block(const uint8_t* nibbles, int s, uint8_t* q4_k_qs) {
  const int shift = 4 * (s % 2);
  const auto keep = static_cast<uint8_t>(0xf0 >> shift);
  for (int i = 0; i < 16; ++i) {
    uint8_t& lo = q4_k_qs[32 * (s / 2) + i];
    uint8_t& hi = q4_k_qs[32 * (s / 2) + 16 + i];
    lo = static_cast<uint8_t>((lo & keep) | (nibbles[i] & 15) << shift);
    hi = static_cast<uint8_t>((hi & keep) | (nibbles[i] >> 4) << shift);
  }
}

// A Q4_K/Q5_K block's d, dmin and scales <-> a pair's head.
// The two super-blocks' heads <-> a K pair's: d, dmin, and the scales and mins of their
// 8 sub-blocks each as six-bit strings (lane b = super-block b / 8, sub-block b % 8).
template <class Block>
void put_pair_head(const Block* src, KPairHead* head) {
  std::memset(head, 0, sizeof *head);
  int sc[16], mn[16];
  for (int s = 0; s < 2; ++s) {
    head->d[s] = src[s].d, head->dmin[s] = src[s].dmin;
    for (int j = 0; j < 8; ++j)
      ref::q4_k_scale_min(src[s].scales, j, &sc[8 * s + j], &mn[8 * s + j]);
  }
  ref::put_six_bit_values(head->scales, sc);
  ref::put_six_bit_values(head->mins, mn);
}
template <class Block>
void get_pair_head(const KPairHead& head, Block* dst) {
  for (int s = 0; s < 2; ++s) {
    dst[s].d = head.d[s], dst[s].dmin = head.dmin[s];
    int sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = ref::six_bit_value(head.scales, 8 * s + j);
      mn[j] = ref::six_bit_value(head.mins, 8 * s + j);
    }
    ref::pack_q4_k_scales(sc, mn, dst[s].scales);
  }
}

// A 32-bit mask, bit e = element e (Q5_0's qh, the shape get_fifth_bits gives) -> Q5_K's
// fifth bits of sub-block s (bit s of qh[e] for element e).
void set_q5_k_sub_block_fifth_bits(uint32_t bits, int s, uint8_t* q5_k_qh) {
  for (int e = 0; e < 32; ++e) {
    q5_k_qh[e] = static_cast<uint8_t>((q5_k_qh[e] & ~(1u << s)) | ((bits >> e) & 1) << s);
  }
}

// The heads and nibbles of a Q4_K or Q5_K pair (Q5_K's fifth bits are the caller's).
template <class Block, class Group>
void put_k_pair(const Block* src, Group* dst) {
  put_pair_head(src, &dst->head);
  for (int b = 0; b < kX16Blocks; ++b) {
    uint8_t nibbles[16];
    q4_k_sub_block_to_nibbles(src[b / 8].qs, b % 8, nibbles);
    put_nibbles(nibbles, b, dst->qs);
  }
}
template <class Block, class Group>
void get_k_pair(const Group& src, Block* dst) {
  get_pair_head(src.head, dst);
  for (int b = 0; b < kX16Blocks; ++b) {
    uint8_t nibbles[16];
    get_nibbles(src.qs, b, nibbles);
    nibbles_to_q4_k_sub_block(nibbles, b % 8, dst[b / 8].qs);
  }
}

void arrange_q4_k_x16p(const BlockQ4_K* src, BlockQ4_Kx16P* dst) {
  put_k_pair(src, dst);
}
void unarrange_q4_k_x16p(const BlockQ4_Kx16P& src, BlockQ4_K* dst) {
  get_k_pair(src, dst);
}

void arrange_iq4_xs_x16p(const BlockIQ4_XS* src, BlockIQ4_XSx16P* dst) {
  std::memset(&dst->head, 0, sizeof dst->head);
  int ls[16];
  for (int s = 0; s < 2; ++s) {
    dst->head.d[s] = src[s].d;
    for (int j = 0; j < 8; ++j)
      ls[8 * s + j] = ref::iq4_xs_scale(src[s].scales_h, src[s].scales_l, j);
  }
  ref::put_six_bit_values(dst->head.scales, ls);
  // An IQ4_XS sub-block's 16 index bytes are a Q4_0 block's nibbles already.
  for (int b = 0; b < kX16Blocks; ++b) put_nibbles(src[b / 8].qs + 16 * (b % 8), b, dst->qs);
}
void unarrange_iq4_xs_x16p(const BlockIQ4_XSx16P& src, BlockIQ4_XS* dst) {
  for (int s = 0; s < 2; ++s) {
    dst[s].d = src.head.d[s], dst[s].scales_h = 0;
    std::memset(dst[s].scales_l, 0, sizeof dst[s].scales_l);
    for (int j = 0; j < 8; ++j) {
      const int ls = ref::six_bit_value(src.head.scales, 8 * s + j);
      dst[s].scales_l[j / 2] |= static_cast<uint8_t>((ls & 15) << (4 * (j % 2)));
      dst[s].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
    }
  }
  for (int b = 0; b < kX16Blocks; ++b) get_nibbles(src.qs, b, dst[b / 8].qs + 16 * (b % 8));
}

void arrange_q5_k_x16p(const BlockQ5_K* src, BlockQ5_Kx16P* dst) {
  put_k_pair(src, dst);
  // Block b = 8p + s of the pair (super-block p, sub-block s) puts the fifth bit of its
  // element 4m + i (bit s of Q5_K's qh[4m + i]) at bit m of qh[4b + i] (put_fifth_bits):
  // for each p and i, the 8 x 8 bit transpose of qh[4m + i], m < 8. (Bit by bit, with
  // a branch on each, this was most of the 4.5 s a 1B Q5_K_M file took to load.)
  for (int p = 0; p < 2; ++p) {
    for (int i = 0; i < 4; ++i) {
      uint64_t rows = 0;  // byte m: qh[4m + i]
      for (int m = 0; m < 8; ++m) rows |= uint64_t{src[p].qh[4 * m + i]} << (8 * m);
      const uint64_t cols = transpose_bits_8x8(rows);  // byte s: bit m = bit s of row m
      for (int s = 0; s < 8; ++s)
        dst->qh[4 * (8 * p + s) + i] = static_cast<uint8_t>(cols >> (8 * s));
    }
  }
}
void unarrange_q5_k_x16p(const BlockQ5_Kx16P& src, BlockQ5_K* dst) {
  get_k_pair(src, dst);
  for (int b = 0; b < kX16Blocks; ++b) {
    uint8_t bits[4];
    get_fifth_bits(src.qh, b, bits);
    uint32_t mask;
    std::memcpy(&mask, bits, sizeof mask);
    set_q5_k_sub_block_fifth_bits(mask, b % 8, dst[b / 8].qh);
  }
}

void arrange_iq4_nl_x16(const BlockIQ4_NL* src, BlockIQ4_NLx16* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst->d[b] = src[b].d;
    put_nibbles(src[b].qs, b, dst->qs);
  }
}
void unarrange_iq4_nl_x16(const BlockIQ4_NLx16& src, BlockIQ4_NL* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = src.d[b];
    get_nibbles(src.qs, b, dst[b].qs);
  }
}

namespace ref {

void q4_1_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ4_1, BlockQ4_1x16, unarrange_q4_1_x16, q4_1_to_float>(src, dst, n);
}
void q4_1_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ4_1, BlockQ4_1x16, q4_1_from_float, arrange_q4_1_x16>(src, dst, n);
}
float q4_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockQ4_1x16, true>(n, w, a, [](const auto& g, const auto& ab, int b) {
    return group_lane(g.qs, nullptr, 0, ab, b, identity);
  });
}

void q5_0_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ5_0, BlockQ5_0x16, unarrange_q5_0_x16, q5_0_to_float>(src, dst, n);
}
void q5_0_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ5_0, BlockQ5_0x16, q5_0_from_float, arrange_q5_0_x16>(src, dst, n);
}
float q5_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockQ5_0x16, false>(n, w, a, [](const auto& g, const auto& ab, int b) {
    return group_lane(g.qs, g.qh, 16, ab, b, identity);
  });
}

void q5_1_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ5_1, BlockQ5_1x16, unarrange_q5_1_x16, q5_1_to_float>(src, dst, n);
}
void q5_1_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ5_1, BlockQ5_1x16, q5_1_from_float, arrange_q5_1_x16>(src, dst, n);
}
float q5_1_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockQ5_1x16, true>(n, w, a, [](const auto& g, const auto& ab, int b) {
    return group_lane(g.qs, g.qh, 0, ab, b, identity);
  });
}

void iq4_nl_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockIQ4_NL, BlockIQ4_NLx16, unarrange_iq4_nl_x16, iq4_nl_to_float>(src, dst, n);
}
void iq4_nl_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockIQ4_NL, BlockIQ4_NLx16, iq4_nl_from_float, arrange_iq4_nl_x16>(src, dst, n);
}
float iq4_nl_x16_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockIQ4_NLx16, false>(n, w, a, [](const auto& g, const auto& ab, int b) {
    return group_lane(g.qs, nullptr, 128, ab, b, [](int q) { return kIQ4NLValues[q] + 128; });
  });
}

void q4_k_x16p_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ4_K, BlockQ4_Kx16P, unarrange_q4_k_x16p, q4_k_to_float>(src, dst, n);
}
void q4_k_x16p_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ4_K, BlockQ4_Kx16P, q4_k_from_float, arrange_q4_k_x16p>(src, dst, n);
}
float q4_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockQ4_Kx16P, true>(
      n, w, a,
      [](const auto& g, const auto& ab, int b) {
        return group_lane(g.qs, nullptr, 0, ab, b, identity);
      },
      KPairFactors{});
}

void q5_k_x16p_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ5_K, BlockQ5_Kx16P, unarrange_q5_k_x16p, q5_k_to_float>(src, dst, n);
}
void q5_k_x16p_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ5_K, BlockQ5_Kx16P, q5_k_from_float, arrange_q5_k_x16p>(src, dst, n);
}
float q5_k_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockQ5_Kx16P, true>(
      n, w, a,
      [](const auto& g, const auto& ab, int b) {
        return group_lane(g.qs, g.qh, 0, ab, b, identity);
      },
      KPairFactors{});
}

void iq4_xs_x16p_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockIQ4_XS, BlockIQ4_XSx16P, unarrange_iq4_xs_x16p, iq4_xs_to_float>(src, dst, n);
}
void iq4_xs_x16p_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockIQ4_XS, BlockIQ4_XSx16P, iq4_xs_from_float, arrange_iq4_xs_x16p>(src, dst, n);
}
float iq4_xs_x16p_vec_dot(int64_t n, const void* w, const void* a) {
  return reduce_groups<BlockIQ4_XSx16P, false>(
      n, w, a,
      [](const auto& g, const auto& ab, int b) {
        return group_lane(g.qs, nullptr, 128, ab, b, [](int q) { return kIQ4NLValues[q] + 128; });
      },
      Iq4XsPairFactors{});
}

}  // namespace ref
}  // namespace strata::kernels
