// Scalar reference kernels for the 32-element block types Q8_0 and Q4_0.
//
// Quantizers divide by the fp16-rounded scale that is actually stored (ggml divides by the
// unrounded one), and round that scale's magnitude up when rounding to fp16 made it too small
// to reach the block's largest element (this matters for subnormal scales), so every element
// the format can reach is within half a step of its value.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/rounding.h"

namespace strata::kernels::ref {

void q8_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    for (int i = 0; i < kQK8_0; ++i) dst[b * kQK8_0 + i] = d * blocks[b].qs[i];
  }
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_0* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* x = src + b * kQK8_0;
    float amax = 0.0f;
    for (int i = 0; i < kQK8_0; ++i) amax = std::max(amax, std::fabs(x[i]));
    uint16_t dh = fp32_to_fp16(amax / 127.0f);
    if (fp16_to_fp32(dh) * 127.0f < amax) ++dh;  // next half up: keep amax on the grid
    const float d = fp16_to_fp32(dh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = dh;
    for (int i = 0; i < kQK8_0; ++i) {
      blocks[b].qs[i] = static_cast<int8_t>(round_away_clamped(x[i] * id, 127.0f));
    }
  }
}

float q8_0_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ8_0* wb = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* ab = static_cast<const BlockQ8_0*>(a);
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0; ++i) sumi += wb[b].qs[i] * ab[b].qs[i];
    const float d = fp16_to_fp32(wb[b].d) * fp16_to_fp32(ab[b].d);
    sum += static_cast<double>(d) * sumi;
  }
  return static_cast<float>(sum);
}

void q4_0_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* blocks = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    float* y = dst + b * kQK8_0;
    for (int i = 0; i < kQK8_0 / 2; ++i) {
      y[i] = static_cast<float>((blocks[b].qs[i] & 0x0f) - 8) * d;
      y[i + kQK8_0 / 2] = static_cast<float>((blocks[b].qs[i] >> 4) - 8) * d;
    }
  }
}

// The element of largest magnitude maps to q = 0 (value -8 * d); the opposite end of the
// range reaches +7 * d, so it may be clipped by up to one step.
void q4_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ4_0* blocks = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* x = src + b * kQK8_0;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQK8_0; ++i) {
      if (std::fabs(x[i]) > amax) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    }
    uint16_t dh = fp32_to_fp16(max / -8.0f);
    if (std::fabs(fp16_to_fp32(dh)) * 8.0f < amax) ++dh;  // larger magnitude, same sign
    const float d = fp16_to_fp32(dh);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = dh;
    auto quantize = [id](float v) {
      // floor(v * id + 8.5) = round half up to the nearest level, clamped to [0, 15].
      const float level = std::min(15.0f, std::max(0.0f, v * id + 8.5f));
      return static_cast<uint8_t>(level);
    };
    for (int i = 0; i < kQK8_0 / 2; ++i) {
      blocks[b].qs[i] = static_cast<uint8_t>(quantize(x[i]) | (quantize(x[i + kQK8_0 / 2]) << 4));
    }
  }
}

float q4_0_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ4_0* wb = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* ab = static_cast<const BlockQ8_0*>(a);
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    int32_t sumi = 0;
    for (int i = 0; i < kQK8_0 / 2; ++i) {
      sumi += ((wb[b].qs[i] & 0x0f) - 8) * ab[b].qs[i];
      sumi += ((wb[b].qs[i] >> 4) - 8) * ab[b].qs[i + kQK8_0 / 2];
    }
    const float d = fp16_to_fp32(wb[b].d) * fp16_to_fp32(ab[b].d);
    sum += static_cast<double>(d) * sumi;
  }
  return static_cast<float>(sum);
}

}  // namespace strata::kernels::ref
