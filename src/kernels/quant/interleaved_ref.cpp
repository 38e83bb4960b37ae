// The interleaved layouts' byte moves and their scalar reference kernels.
//
// ref::q4_0_x16_vec_dot and q8_0_x16_vec_dot are exact scalar models of the AVX-512
// kernels (interleaved_avx512.cpp), not double-precision yardsticks like the other
// reference dot products: lane b of a group sums block b's 32 products exactly in int32,
// starting from -offset * the activation's sum[b] (offset 8 for Q4_0 nibbles, 128 for
// Q8_0 quants stored unsigned); the float steps are acc[b] = fma(d_w[b] * d_a[b],
// float(lane), acc[b]) over the groups, then the 16 lanes are added as a tree (i + 8, then
// + 4, + 2, + 1). So each agrees with its kernel bit for bit
// (tests/kernels/interleaved_test.cpp), and with the file layout's kernels up to float
// rounding.
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "core/thread_ranges.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {

DType repacked_weight_type(DType type, int64_t cols) {
  const KernelIsa isa = cpu_kernel_isa();
  if (cols <= 0 || isa < KernelIsa::avx2) return type;
  const bool super_blocks = cols % kQK_K == 0, groups = cols % kQKX16 == 0;
  // Super-block pairs: half the per-lane float work of Q4_K_X16, Q5_K_X16 and IQ4_XS_X16
  // (blocks.h).
  if (groups && type == DType::Q4_K) return DType::Q4_K_X16P;
  if (groups && type == DType::Q5_K) return DType::Q5_K_X16P;
  if (groups && type == DType::IQ4_XS) return DType::IQ4_XS_X16P;
  if (super_blocks) {
    if (type == DType::Q6_K) return DType::Q6_K_X16;
    if (type == DType::Q4_K) return DType::Q4_K_X16;
    if (type == DType::Q5_K) return DType::Q5_K_X16;
    if (type == DType::IQ4_XS) return DType::IQ4_XS_X16;
    // AVX-512 takes Q3_K_X16's bit-2 masks straight into mask registers; AVX2 shifts the
    // sliced plane of Q3_K_X16S instead of spreading mask bits to bytes (blocks.h).
    if (type == DType::Q3_K)
      return isa >= KernelIsa::avx512_vnni ? DType::Q3_K_X16 : DType::Q3_K_X16S;
    if (type == DType::Q2_K) return DType::Q2_K_X16;
  }
  if (groups && type == DType::Q4_0) return DType::Q4_0_X16;
  if (groups && type == DType::Q8_0) return DType::Q8_0_X16;
  if (groups && type == DType::Q4_1) return DType::Q4_1_X16;
  if (groups && type == DType::Q5_0) return DType::Q5_0_X16;
  if (groups && type == DType::Q5_1) return DType::Q5_1_X16;
  if (groups && type == DType::IQ4_NL) return DType::IQ4_NL_X16;
  return type;
}

namespace {

// Rewrites each run of kBlocks blocks in place as one group (same size), arranged at its
// final address (Q8_0_X16's layout depends on it). Large tensors are split over threads,
// one range of groups each (the groups are independent): a model's load repacks hundreds
// of MiB.
template <class Block, class Group, void (*arrange)(const Block*, Group*), int kBlocks = kX16Blocks>
void repack_groups(void* data, int64_t n_groups) {
  static_assert(sizeof(Group) == kBlocks * sizeof(Block));
  auto* p = static_cast<uint8_t*>(data);
  auto repack_range = [p](int64_t begin, int64_t end) {
    Block blocks[kBlocks];
    for (int64_t i = begin; i < end; ++i) {
      uint8_t* group = p + i * static_cast<int64_t>(sizeof(Group));
      std::memcpy(blocks, group, sizeof(blocks));
      arrange(blocks, reinterpret_cast<Group*>(group));
    }
  };
  constexpr int64_t kGroupsPerThread = (int64_t{2} << 20) / static_cast<int64_t>(sizeof(Group));
  run_in_thread_ranges(n_groups, kGroupsPerThread, 1, repack_range);
}

}  // namespace

void repack_weight_rows(DType from, DType to, void* data, int64_t rows, int64_t cols) {
  const bool shape_ok = rows >= 0 && cols >= 0 && cols % kQKX16 == 0;
  if (shape_ok && from == DType::Q4_0 && to == DType::Q4_0_X16) {
    repack_groups<BlockQ4_0, BlockQ4_0x16, arrange_q4_0_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q8_0 && to == DType::Q8_0_X16) {
    repack_groups<BlockQ8_0, BlockQ8_0x16, arrange_q8_0_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q4_1 && to == DType::Q4_1_X16) {
    repack_groups<BlockQ4_1, BlockQ4_1x16, arrange_q4_1_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q5_0 && to == DType::Q5_0_X16) {
    repack_groups<BlockQ5_0, BlockQ5_0x16, arrange_q5_0_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q5_1 && to == DType::Q5_1_X16) {
    repack_groups<BlockQ5_1, BlockQ5_1x16, arrange_q5_1_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::IQ4_NL && to == DType::IQ4_NL_X16) {
    repack_groups<BlockIQ4_NL, BlockIQ4_NLx16, arrange_iq4_nl_x16>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q4_K && to == DType::Q4_K_X16P) {
    repack_groups<BlockQ4_K, BlockQ4_Kx16P, arrange_q4_k_x16p, 2>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::Q5_K && to == DType::Q5_K_X16P) {
    repack_groups<BlockQ5_K, BlockQ5_Kx16P, arrange_q5_k_x16p, 2>(data, rows * (cols / kQKX16));
  } else if (shape_ok && from == DType::IQ4_XS && to == DType::IQ4_XS_X16P) {
    repack_groups<BlockIQ4_XS, BlockIQ4_XSx16P, arrange_iq4_xs_x16p, 2>(data,
                                                                        rows * (cols / kQKX16));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q6_K &&
             to == DType::Q6_K_X16) {
    repack_groups<BlockQ6_K, BlockQ6_Kx16, arrange_q6_k_x16, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q4_K &&
             to == DType::Q4_K_X16) {
    repack_groups<BlockQ4_K, BlockQ4_Kx16, arrange_q4_k_x16, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q5_K &&
             to == DType::Q5_K_X16) {
    repack_groups<BlockQ5_K, BlockQ5_Kx16, arrange_q5_k_x16, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::IQ4_XS &&
             to == DType::IQ4_XS_X16) {
    repack_groups<BlockIQ4_XS, BlockIQ4_XSx16, arrange_iq4_xs_x16, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q3_K &&
             to == DType::Q3_K_X16) {
    repack_groups<BlockQ3_K, BlockQ3_Kx16, arrange_q3_k_x16, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q3_K &&
             to == DType::Q3_K_X16S) {
    repack_groups<BlockQ3_K, BlockQ3_Kx16S, arrange_q3_k_x16s, 1>(data, rows * (cols / kQK_K));
  } else if (rows >= 0 && cols >= 0 && cols % kQK_K == 0 && from == DType::Q2_K &&
             to == DType::Q2_K_X16) {
    repack_groups<BlockQ2_K, BlockQ2_Kx16, arrange_q2_k_x16, 1>(data, rows * (cols / kQK_K));
  } else {
    throw Error("kernels: cannot repack " + std::string(dtype_name(from)) + " rows of " +
                std::to_string(cols) + " elements as " + std::string(dtype_name(to)));
  }
}

void arrange_q4_0_x16(const BlockQ4_0* src, BlockQ4_0x16* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst->d[b] = src[b].d;
    for (int c = 0; c < 4; ++c) std::memcpy(dst->qs + 64 * c + 4 * b, src[b].qs + 4 * c, 4);
  }
}

void unarrange_q4_0_x16(const BlockQ4_0x16& src, BlockQ4_0* dst) {
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = src.d[b];
    for (int c = 0; c < 4; ++c) std::memcpy(dst[b].qs + 4 * c, src.qs + 64 * c + 4 * b, 4);
  }
}

void arrange_q8_0_x16(const BlockQ8_0* src, BlockQ8_0x16* dst) {
  uint16_t* d = q8_0_x16_d(*dst);
  uint8_t* qs = q8_0_x16_qs(*dst);
  for (int b = 0; b < kX16Blocks; ++b) {
    d[b] = src[b].d;
    for (int k = 0; k < kQK8_0 / 4; ++k) {  // 4 quants at a time, each + 128
      uint32_t four;
      std::memcpy(&four, src[b].qs + 4 * k, 4);
      four ^= 0x80808080u;
      std::memcpy(qs + 64 * k + 4 * b, &four, 4);
    }
  }
}

void unarrange_q8_0_x16(const BlockQ8_0x16& src, BlockQ8_0* dst) {
  const uint16_t* d = q8_0_x16_d(src);
  const uint8_t* qs = q8_0_x16_qs(src);
  for (int b = 0; b < kX16Blocks; ++b) {
    dst[b].d = d[b];
    for (int i = 0; i < kQK8_0; ++i) {
      dst[b].qs[i] = static_cast<int8_t>(qs[64 * (i / 4) + 4 * b + i % 4] ^ 0x80);
    }
  }
}

void arrange_q8_0_x16a(const BlockQ8_0* src, BlockQ8_0x16A* dst) {
  // Four bytes at a time, the sum in its own loop: this runs once per 512 activations of
  // every decode matmul, on one thread while the others wait, and byte by byte it took
  // about 1.3% of a Q4_0 decode step's samples.
  for (int b = 0; b < kX16Blocks; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < kQK8_0; ++i) sum += src[b].qs[i];
    for (int k = 0; k < kQK8_0 / 4; ++k)
      std::memcpy(dst->qs + 64 * k + 4 * b, src[b].qs + 4 * k, 4);
    dst->sum[b] = sum;
    dst->d[b] = fp16_to_fp32(src[b].d);
  }
}

namespace {

// The 256 six-bit quants of a super-block (biased, in [0, 63]) in element order, from and
// to the Q6_K layouts (blocks.h). Both keep four quants in three bytes: the low nibbles of
// two ql bytes (lo0: quants 0 and 2, lo1: 1 and 3, high nibble second) and their high 2
// bits at bits 0, 2, 4, 6 of one qh byte; only where the four quants lie differs (stride).
// Straight loops over bytes (the quads inlined: called, they doubled a Q6_K file's load):
// the first version moved each element through two place functions called by pointer,
// and repacking the 32000 x 2048 Q6_K output matrix of the 1B preset took ~0.9 s of a
// 2.5 s load.
[[gnu::always_inline]] inline void unpack_q6_quad(uint8_t lo0, uint8_t lo1, uint8_t hi, uint8_t* e,
                                                  int stride) {
  e[0] = static_cast<uint8_t>((lo0 & 15) | (hi & 3) << 4);
  e[stride] = static_cast<uint8_t>((lo1 & 15) | (hi >> 2 & 3) << 4);
  e[2 * stride] = static_cast<uint8_t>((lo0 >> 4) | (hi >> 4 & 3) << 4);
  e[3 * stride] = static_cast<uint8_t>((lo1 >> 4) | (hi >> 6 & 3) << 4);
}
[[gnu::always_inline]] inline void pack_q6_quad(const uint8_t* e, int stride, uint8_t& lo0,
                                                uint8_t& lo1, uint8_t& hi) {
  lo0 = static_cast<uint8_t>((e[0] & 15) | (e[2 * stride] & 15) << 4);
  lo1 = static_cast<uint8_t>((e[stride] & 15) | (e[3 * stride] & 15) << 4);
  hi = static_cast<uint8_t>(e[0] >> 4 | (e[stride] >> 4) << 2 | (e[2 * stride] >> 4) << 4 |
                            (e[3 * stride] >> 4) << 6);
}

// Q6_K: elements 128h + l + 32c (c < 4, l < 32) in ql[64h + l], ql[64h + 32 + l] and
// qh[32h + l].
void q6_k_unpack(const uint8_t* ql, const uint8_t* qh, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l)
      unpack_q6_quad(ql[64 * h + l], ql[64 * h + 32 + l], qh[32 * h + l], q + 128 * h + l, 32);
  }
}
void q6_k_pack(const uint8_t* q, uint8_t* ql, uint8_t* qh) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l)
      pack_q6_quad(q + 128 * h + l, 32, ql[64 * h + l], ql[64 * h + 32 + l], qh[32 * h + l]);
  }
}

// Q6_K_X16: elements 16j + 4k + i (k < 4; p = 4j + i < 64) in ql[p], ql[64 + p] and qh[p].
void q6_k_x16_unpack(const uint8_t* ql, const uint8_t* qh, uint8_t* q) {
  for (int p = 0; p < 64; ++p)
    unpack_q6_quad(ql[p], ql[64 + p], qh[p], q + 16 * (p / 4) + p % 4, 4);
}
void q6_k_x16_pack(const uint8_t* q, uint8_t* ql, uint8_t* qh) {
  for (int p = 0; p < 64; ++p) pack_q6_quad(q + 16 * (p / 4) + p % 4, 4, ql[p], ql[64 + p], qh[p]);
}

}  // namespace

void arrange_q6_k_x16(const BlockQ6_K* src, BlockQ6_Kx16* dst) {
  uint8_t q[kQK_K];
  q6_k_unpack(src->ql, src->qh, q);
  q6_k_x16_pack(q, dst->ql, dst->qh);
  std::memcpy(dst->scales, src->scales, sizeof(dst->scales));
  dst->d = src->d;
}

void unarrange_q6_k_x16(const BlockQ6_Kx16& src, BlockQ6_K* dst) {
  uint8_t q[kQK_K];
  q6_k_x16_unpack(src.ql, src.qh, q);
  q6_k_pack(q, dst->ql, dst->qh);
  std::memcpy(dst->scales, src.scales, sizeof(dst->scales));
  dst->d = src.d;
}

void arrange_q8_k_x16a(const BlockQ8_K* src, BlockQ8_Kx16A* dst) {
  for (int j = 0; j < kQK_K / 16; ++j) {
    for (int k = 0; k < 4; ++k) std::memcpy(dst->qs + 64 * k + 4 * j, src->qs + 16 * j + 4 * k, 4);
    dst->bias[j] = -32 * src->bsums[j];
  }
  dst->d = src->d;
  std::memset(dst->neg_sums, 0, sizeof(dst->neg_sums));
  // Sub-block j's sum in word 4 (j / 2) + j % 2; |bsums| <= 16 x 127 fits int16.
  for (int j = 0; j < kQK_K / 16; ++j)
    dst->neg_sums[4 * (j / 2) + j % 2] = static_cast<int16_t>(-src->bsums[j]);
}

namespace ref {

void q4_0_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ4_0, BlockQ4_0x16, unarrange_q4_0_x16, q4_0_to_float>(src, dst, n);
}

void q4_0_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ4_0, BlockQ4_0x16, q4_0_from_float, arrange_q4_0_x16>(src, dst, n);
}

void q8_0_x16_to_float(const void* src, float* dst, int64_t n) {
  x16_to_float<BlockQ8_0, BlockQ8_0x16, unarrange_q8_0_x16, q8_0_to_float>(src, dst, n);
}

void q8_0_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ8_0, BlockQ8_0x16, q8_0_from_float, arrange_q8_0_x16>(src, dst, n);
}

void q8_0_x16a_to_float(const void* src, float* dst, int64_t n) {
  const auto* groups = static_cast<const BlockQ8_0x16A*>(src);
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    for (int b = 0; b < kX16Blocks; ++b) {
      for (int i = 0; i < kQK8_0; ++i) {
        dst[g * kQKX16 + 32 * b + i] = groups[g].d[b] * groups[g].qs[64 * (i / 4) + 4 * b + i % 4];
      }
    }
  }
}

void q8_0_x16a_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ8_0, BlockQ8_0x16A, q8_0_from_float, arrange_q8_0_x16a>(src, dst, n);
}

void q8_0_x16at_from_float(const float* src, void* dst, int64_t n) {
  q8_0_x16a_from_float(src, dst, n);
  const auto* groups = static_cast<const BlockQ8_0x16A*>(dst);
  const int64_t ng = n / kQKX16;
  int8_t* rows = static_cast<int8_t*>(dst) + ng * static_cast<int64_t>(sizeof(BlockQ8_0x16A));
  for (int64_t g = 0; g < ng; ++g) {
    for (int b = 0; b < kX16Blocks; ++b) {
      for (int k = 0; k < 8; ++k) {
        std::memcpy(rows + (g * kX16Blocks + b) * 32 + 4 * k, groups[g].qs + 64 * k + 4 * b, 4);
      }
    }
  }
}

namespace {

// The float steps shared by both weight types (see the top): lane b of each group holds
// an exact integer dot product; `lane(g, b)` supplies it.
template <class Lane>
float reduce_groups(int64_t n_groups, const uint16_t* (*scales)(const void*, int64_t),
                    const void* w, const BlockQ8_0x16A* ag, Lane lane) {
  float acc[kX16Blocks] = {};
  for (int64_t g = 0; g < n_groups; ++g) {
    const uint16_t* d = scales(w, g);
    for (int b = 0; b < kX16Blocks; ++b) {
      const float scale = fp16_to_fp32(d[b]) * ag[g].d[b];
      acc[b] = std::fma(scale, static_cast<float>(lane(g, b)), acc[b]);
    }
  }
  for (int width = kX16Blocks / 2; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

template <class Group>
const uint16_t* group_scales(const void* w, int64_t g) {
  return static_cast<const Group*>(w)[g].d;
}
template <>
const uint16_t* group_scales<BlockQ8_0x16>(const void* w, int64_t g) {
  return q8_0_x16_d(static_cast<const BlockQ8_0x16*>(w)[g]);
}

}  // namespace

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wg = static_cast<const BlockQ4_0x16*>(w);
  const auto* ag = static_cast<const BlockQ8_0x16A*>(a);
  return reduce_groups(n / kQKX16, group_scales<BlockQ4_0x16>, w, ag, [&](int64_t g, int b) {
    int32_t lane = -8 * ag[g].sum[b];  // nibbles enter unsigned: q + 8
    for (int c = 0; c < 4; ++c) {
      for (int j = 0; j < 4; ++j) {
        const int q = wg[g].qs[64 * c + 4 * b + j];
        lane +=
            (q & 15) * ag[g].qs[64 * c + 4 * b + j] + (q >> 4) * ag[g].qs[64 * (c + 4) + 4 * b + j];
      }
    }
    return lane;
  });
}

float q8_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wg = static_cast<const BlockQ8_0x16*>(w);
  const auto* ag = static_cast<const BlockQ8_0x16A*>(a);
  return reduce_groups(n / kQKX16, group_scales<BlockQ8_0x16>, w, ag, [&](int64_t g, int b) {
    int32_t lane = -128 * ag[g].sum[b];  // quants stored unsigned: q + 128
    const uint8_t* qs = q8_0_x16_qs(wg[g]);
    for (int k = 0; k < 8; ++k) {
      for (int j = 0; j < 4; ++j) lane += qs[64 * k + 4 * b + j] * ag[g].qs[64 * k + 4 * b + j];
    }
    return lane;
  });
}

void q6_k_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ6_Kx16*>(src);
  BlockQ6_K block;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unarrange_q6_k_x16(blocks[b], &block);
    q6_k_to_float(&block, dst + b * kQK_K, kQK_K);
  }
}

void q6_k_x16_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ6_K, BlockQ6_Kx16, q6_k_from_float, arrange_q6_k_x16, kQK_K>(src, dst, n);
}

void q8_k_x16a_to_float(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_Kx16A*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int e = 0; e < kQK_K; ++e) {
      dst[b * kQK_K + e] = blocks[b].d * blocks[b].qs[64 * ((e % 16) / 4) + 4 * (e / 16) + e % 4];
    }
  }
}

void q8_k_x16a_from_float(const float* src, void* dst, int64_t n) {
  x16_from_float<BlockQ8_K, BlockQ8_Kx16A, q8_k_from_float, arrange_q8_k_x16a, kQK_K>(src, dst, n);
}

// The AVX-512 kernel's steps: lane j of a block is sub-block j's exact dot product of the
// re-centred quants (the biased sum plus the activation's bias[j]) times its scale
// (|value| < 2^24, so the float conversion is exact), then acc[j] = fma(d_w * d_a,
// float(lane), acc[j]) over the blocks and the lane tree of reduce_groups.
float q6_k_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wb = static_cast<const BlockQ6_Kx16*>(w);
  const auto* ab = static_cast<const BlockQ8_Kx16A*>(a);
  float acc[kQK_K / 16] = {};
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float scale = fp16_to_fp32(wb[b].d) * ab[b].d;
    for (int j = 0; j < kQK_K / 16; ++j) {
      int32_t lane = ab[b].bias[j];
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 4; ++i) {
          const int q = (wb[b].ql[64 * (k % 2) + 4 * j + i] >> (4 * (k / 2)) & 15) |
                        ((wb[b].qh[4 * j + i] >> (2 * k)) & 3) << 4;
          lane += q * ab[b].qs[64 * k + 4 * j + i];
        }
      }
      acc[j] = std::fma(scale, static_cast<float>(lane * wb[b].scales[j]), acc[j]);
    }
  }
  for (int width = kQK_K / 32; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

}  // namespace ref
}  // namespace strata::kernels
