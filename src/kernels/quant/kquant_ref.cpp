// Scalar reference kernels for the 256-element super-block types: Q8_K (activations),
// Q4_K and Q6_K (weights). The quantizers for Q4_K and Q6_K are in kquant_quantize.cpp.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/rounding.h"

namespace strata::kernels::ref {
namespace {

// Quants of one Q4_K block in element order, each in [0, 15].
void unpack_q4_k(const BlockQ4_K& block, uint8_t* q) {
  for (int k = 0; k < kQK_K / 64; ++k) {
    for (int l = 0; l < 32; ++l) {
      q[64 * k + l] = block.qs[32 * k + l] & 0x0f;
      q[64 * k + 32 + l] = block.qs[32 * k + l] >> 4;
    }
  }
}

// Quants of one Q6_K block in element order, re-centred to [-32, 31].
void unpack_q6_k(const BlockQ6_K& block, int8_t* q) {
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = block.ql + 64 * half;
    const uint8_t* qh = block.qh + 32 * half;
    int8_t* out = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<int8_t>(((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32);
      out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32);
      out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

}  // namespace

void q4_k_scale_min(const uint8_t* scales, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = (scales[j + 4] & 0x0f) | ((scales[j - 4] >> 6) << 4);
    *min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

void q8_k_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* blocks = static_cast<const BlockQ8_K*>(src);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    for (int i = 0; i < kQK_K; ++i) dst[b * kQK_K + i] = blocks[b].d * blocks[b].qs[i];
  }
}

// Symmetric 8-bit quantization with a float scale: q = nearest(127 * x / amax). Blocks whose
// largest magnitude is below 1e-30 become all-zero, which keeps 127 / amax finite.
void q8_k_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_K* blocks = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* x = src + b * kQK_K;
    BlockQ8_K& block = blocks[b];
    float amax = 0.0f;
    for (int i = 0; i < kQK_K; ++i) amax = std::max(amax, std::fabs(x[i]));
    if (!(amax >= 1e-30f)) {
      block = BlockQ8_K{};
      continue;
    }
    const float iscale = 127.0f / amax;
    block.d = 1.0f / iscale;
    for (int i = 0; i < kQK_K; ++i) {
      block.qs[i] = static_cast<int8_t>(std::clamp(nearest_int(iscale * x[i]), -127, 127));
    }
    for (int k = 0; k < kQK_K / 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += block.qs[16 * k + i];
      block.bsums[k] = static_cast<int16_t>(sum);
    }
  }
}

void q4_k_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* blocks = static_cast<const BlockQ4_K*>(src);
  uint8_t q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ4_K& block = blocks[b];
    const float d = fp16_to_fp32(block.d);
    const float dmin = fp16_to_fp32(block.dmin);
    unpack_q4_k(block, q);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(block.scales, j, &sc, &m);
      const float scale = d * static_cast<float>(sc);
      const float min = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        dst[b * kQK_K + 32 * j + l] = scale * q[32 * j + l] - min;
      }
    }
  }
}

float q4_k_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ4_K* wb = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* ab = static_cast<const BlockQ8_K*>(a);
  uint8_t q[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_q4_k(wb[b], q);
    int64_t scaled = 0;  // sum over sub-blocks of scale * sum(q * a)
    int64_t mins = 0;    // sum over sub-blocks of min * sum(a)
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      q4_k_scale_min(wb[b].scales, j, &sc, &m);
      int32_t dot = 0, asum = 0;
      for (int l = 0; l < 32; ++l) {
        dot += q[32 * j + l] * ab[b].qs[32 * j + l];
        asum += ab[b].qs[32 * j + l];
      }
      scaled += static_cast<int64_t>(sc) * dot;
      mins += static_cast<int64_t>(m) * asum;
    }
    const float d = fp16_to_fp32(wb[b].d) * ab[b].d;
    const float dmin = fp16_to_fp32(wb[b].dmin) * ab[b].d;
    sum += static_cast<double>(d) * static_cast<double>(scaled) -
           static_cast<double>(dmin) * static_cast<double>(mins);
  }
  return static_cast<float>(sum);
}

void q6_k_to_float(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* blocks = static_cast<const BlockQ6_K*>(src);
  int8_t q[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_fp32(blocks[b].d);
    unpack_q6_k(blocks[b], q);
    // (d * scale) * q, in that order: d * scale is exact, the second product may round.
    for (int i = 0; i < kQK_K; ++i) {
      const float scale = d * static_cast<float>(blocks[b].scales[i / 16]);
      dst[b * kQK_K + i] = scale * static_cast<float>(q[i]);
    }
  }
}

float q6_k_vec_dot(int64_t n, const void* w, const void* a) {
  const BlockQ6_K* wb = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* ab = static_cast<const BlockQ8_K*>(a);
  int8_t q[kQK_K];
  double sum = 0.0;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    unpack_q6_k(wb[b], q);
    int64_t scaled = 0;
    for (int s = 0; s < kQK_K / 16; ++s) {
      int32_t dot = 0;
      for (int l = 0; l < 16; ++l) dot += q[16 * s + l] * ab[b].qs[16 * s + l];
      scaled += static_cast<int64_t>(wb[b].scales[s]) * dot;
    }
    const float d = fp16_to_fp32(wb[b].d) * ab[b].d;
    sum += static_cast<double>(d) * static_cast<double>(scaled);
  }
  return static_cast<float>(sum);
}

}  // namespace strata::kernels::ref
