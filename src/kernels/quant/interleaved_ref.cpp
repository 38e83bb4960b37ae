// The interleaved layouts' byte moves and their scalar reference kernels.
//
// ref::q4_0_x16_vec_dot is the exact scalar model of the AVX-512 kernel
// (interleaved_avx512.cpp), not a double-precision yardstick like the other reference dot
// products: lane b of a group sums block b's 32 products exactly in int32, starting from
// the activation's bias[b]; the float steps are acc[b] = fma(d_w[b] * d_a[b], float(lane),
// acc[b]) over the groups, then the 16 lanes are added as a tree (i + 8, then + 4, + 2,
// + 1). So the two agree bit for bit (tests/kernels/interleaved_test.cpp), and against
// Q4_0 in the file layout they differ only by float rounding.
#include <cmath>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {

DType repacked_weight_type(DType type, int64_t cols) {
  if (type == DType::Q4_0 && cols > 0 && cols % kQKX16 == 0 && cpu_kernel_isa() >= KernelIsa::avx512_vnni) {
    return DType::Q4_0_X16;
  }
  return type;
}

void repack_weight_rows(DType from, DType to, void* data, int64_t rows, int64_t cols) {
  if (from != DType::Q4_0 || to != DType::Q4_0_X16 || rows < 0 || cols < 0 || cols % kQKX16 != 0) {
    throw Error("kernels: cannot repack " + std::string(dtype_name(from)) + " rows of " +
                std::to_string(cols) + " elements as " + std::string(dtype_name(to)));
  }
  repack_q4_0_rows_to_x16(data, rows, cols);
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
  for (int b = 0; b < kX16Blocks; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < kQK8_0; ++i) sum += src[b].qs[i];
    dst->bias[b] = -8 * sum;
    dst->d[b] = fp16_to_fp32(src[b].d);
    for (int c = 0; c < 4; ++c) {
      std::memcpy(dst->qs + 128 * c + 4 * b, src[b].qs + 4 * c, 4);
      std::memcpy(dst->qs + 128 * c + 64 + 4 * b, src[b].qs + 16 + 4 * c, 4);
    }
  }
}

void repack_q4_0_rows_to_x16(void* data, int64_t rows, int64_t cols) {
  const int64_t groups = cols / kQKX16;
  auto* p = static_cast<uint8_t*>(data);
  BlockQ4_0 blocks[kX16Blocks];
  for (int64_t i = 0; i < rows * groups; ++i) {
    uint8_t* group = p + i * static_cast<int64_t>(sizeof(BlockQ4_0x16));
    std::memcpy(blocks, group, sizeof(blocks));
    BlockQ4_0x16 out;
    arrange_q4_0_x16(blocks, &out);
    std::memcpy(group, &out, sizeof(out));
  }
}

namespace ref {

void q4_0_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* groups = static_cast<const BlockQ4_0x16*>(src);
  BlockQ4_0 blocks[kX16Blocks];
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    unarrange_q4_0_x16(groups[g], blocks);
    q4_0_to_float(blocks, dst + g * kQKX16, kQKX16);
  }
}

void q4_0_x16_from_float(const float* src, void* dst, int64_t n) {
  auto* groups = static_cast<BlockQ4_0x16*>(dst);
  BlockQ4_0 blocks[kX16Blocks];
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    q4_0_from_float(src + g * kQKX16, blocks, kQKX16);
    arrange_q4_0_x16(blocks, groups + g);
  }
}

void q8_0_x16_to_float(const void* src, float* dst, int64_t n) {
  const auto* groups = static_cast<const BlockQ8_0x16*>(src);
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    const BlockQ8_0x16& a = groups[g];
    float* y = dst + g * kQKX16;
    for (int b = 0; b < kX16Blocks; ++b) {
      for (int c = 0; c < 4; ++c) {
        for (int j = 0; j < 4; ++j) {
          y[32 * b + 4 * c + j] = a.d[b] * a.qs[128 * c + 4 * b + j];
          y[32 * b + 16 + 4 * c + j] = a.d[b] * a.qs[128 * c + 64 + 4 * b + j];
        }
      }
    }
  }
}

void q8_0_x16_from_float(const float* src, void* dst, int64_t n) {
  kernels::q8_0_x16_from_float<q8_0_from_float>(src, dst, n);
}

float q4_0_x16_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wg = static_cast<const BlockQ4_0x16*>(w);
  const auto* ag = static_cast<const BlockQ8_0x16*>(a);
  float acc[kX16Blocks] = {};
  for (int64_t g = 0; g < n / kQKX16; ++g) {
    for (int b = 0; b < kX16Blocks; ++b) {
      int32_t lane = ag[g].bias[b];
      for (int c = 0; c < 4; ++c) {
        for (int j = 0; j < 4; ++j) {
          const int q = wg[g].qs[64 * c + 4 * b + j];
          lane += (q & 15) * ag[g].qs[128 * c + 4 * b + j] + (q >> 4) * ag[g].qs[128 * c + 64 + 4 * b + j];
        }
      }
      const float scale = fp16_to_fp32(wg[g].d[b]) * ag[g].d[b];
      acc[b] = std::fma(scale, static_cast<float>(lane), acc[b]);
    }
  }
  for (int width = kX16Blocks / 2; width >= 1; width /= 2) {
    for (int i = 0; i < width; ++i) acc[i] += acc[i + width];
  }
  return acc[0];
}

}  // namespace ref
}  // namespace strata::kernels
