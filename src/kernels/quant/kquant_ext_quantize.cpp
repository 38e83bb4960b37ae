// Reference quantizers for Q2_K, Q3_K, Q5_K and IQ4_XS, and the IQ4 scale search that
// IQ4_NL shares. They follow kquant_quantize.cpp: fit each sub-block's scale (and min) by
// weighted least squares over a few candidate grids, quantize those parameters to the
// format's bits against a per-super-block fp16 scale, then quantize every element against
// the parameters exactly as they decode. Not byte-identical to llama.cpp's quantizers.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/quant_fit.h"
#include "kernels/quant/rounding.h"

namespace strata::kernels::ref {
namespace {

// Index of the kIQ4NLValues entry nearest to v (ties to the lower one): a binary search
// over the midpoints between neighbouring levels.
int nearest_iq4_level(float v) {
  int lo = 0, hi = 15;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const float boundary = 0.5f * static_cast<float>(kIQ4NLValues[mid] + kIQ4NLValues[mid + 1]);
    if (v > boundary) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Per-element weights: the element's square plus the group's mean square, so large
// magnitudes are reproduced best but small ones are not ignored; times importance[i]
// when given.
void rms_weights(const float* x, const float* importance, int n, float* w) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const auto floor = static_cast<float>(sum / n);
  for (int i = 0; i < n; ++i) w[i] = (x[i] * x[i] + floor) * (importance ? importance[i] : 1.0f);
}

// Scales quantized against a super-block scale: the largest in magnitude maps to -nmax
// (keeping its sign), the others to the nearest of [-nmax, nmax - 1]. Returns d; ls[j]
// are the signed levels.
float quantize_signed_scales(const float* scales, int n, int nmax, int* ls) {
  float max = 0, amax = 0;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max = scales[j];
    }
  }
  if (amax < 1e-30f) {
    std::fill(ls, ls + n, 0);
    return 0.0f;
  }
  const float inv = -static_cast<float>(nmax) / max;
  for (int j = 0; j < n; ++j) ls[j] = std::clamp(nearest_int(inv * scales[j]), -nmax, nmax - 1);
  return 1.0f / inv;
}

}  // namespace

void quantize_q2_k_block(const float* x, const float* importance, BlockQ2_K& block) {
  double sum_x2 = 0;
  for (int i = 0; i < kQK_K; ++i) sum_x2 += static_cast<double>(x[i]) * x[i];
  const auto rms = static_cast<float>(std::sqrt(sum_x2 / kQK_K));
  AffineFit fits[16];
  float max_scale = 0, max_min = 0;
  for (int s = 0; s < 16; ++s) {
    float w[16];
    for (int l = 0; l < 16; ++l) {
      const int i = 16 * s + l;
      w[l] = (rms + std::fabs(x[i])) * (importance ? importance[i] : 1.0f);
    }
    fits[s] = fit_affine(x + 16 * s, w, 16, 3);
    max_scale = std::max(max_scale, fits[s].scale);
    max_min = std::max(max_min, fits[s].min);
  }
  block.d = fp32_to_fp16(max_scale / 15.0f);
  block.dmin = fp32_to_fp16(max_min / 15.0f);
  const float inv_scale = max_scale > 0 ? 15.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 15.0f / max_min : 0.0f;
  const float d = fp16_to_fp32(block.d), dmin = fp16_to_fp32(block.dmin);
  std::memset(block.qs, 0, sizeof block.qs);
  for (int s = 0; s < 16; ++s) {
    const int ls = std::clamp(nearest_int(inv_scale * fits[s].scale), 0, 15);
    const int lm = std::clamp(nearest_int(inv_min * fits[s].min), 0, 15);
    block.scales[s] = static_cast<uint8_t>(ls | (lm << 4));
    const float scale = d * static_cast<float>(ls), min = dmin * static_cast<float>(lm);
    for (int l = 0; l < 16; ++l) {
      const int i = 16 * s + l;
      const int q = scale == 0.0f ? 0 : std::clamp(nearest_int((x[i] + min) / scale), 0, 3);
      const int h = i / 128, j = (i % 128) / 32;
      block.qs[32 * h + i % 32] = static_cast<uint8_t>(block.qs[32 * h + i % 32] | (q << (2 * j)));
    }
  }
}

void quantize_q3_k_block(const float* x, const float* importance, BlockQ3_K& block) {
  float scales[16];
  for (int s = 0; s < 16; ++s)
    scales[s] = fit_symmetric(x + 16 * s, importance ? importance + 16 * s : nullptr, 16, 4);
  int ls[16];
  block.d = fp32_to_fp16(quantize_signed_scales(scales, 16, 32, ls));
  const float d = fp16_to_fp32(block.d);
  std::memset(block.hmask, 0, sizeof block.hmask);
  std::memset(block.qs, 0, sizeof block.qs);
  std::memset(block.scales, 0, sizeof block.scales);
  for (int s = 0; s < 16; ++s) {
    const int biased = ls[s] + 32;  // 6 bits
    if (s < 8) {
      block.scales[s] = static_cast<uint8_t>(block.scales[s] | (biased & 0x0f));
    } else {
      block.scales[s - 8] = static_cast<uint8_t>(block.scales[s - 8] | ((biased & 0x0f) << 4));
    }
    block.scales[8 + s % 4] =
        static_cast<uint8_t>(block.scales[8 + s % 4] | ((biased >> 4) << (2 * (s / 4))));
    const float scale = d * static_cast<float>(ls[s]);
    for (int l = 0; l < 16; ++l) {
      const int i = 16 * s + l;
      const int q = scale == 0.0f ? 0 : std::clamp(nearest_int(x[i] / scale), -4, 3);
      const int u = q + 4;  // [0, 7]: bits 0-1 in qs, bit 2 in hmask
      const int h = i / 128, j = (i % 128) / 32;
      block.qs[32 * h + i % 32] =
          static_cast<uint8_t>(block.qs[32 * h + i % 32] | ((u & 3) << (2 * j)));
      block.hmask[i % 32] = static_cast<uint8_t>(block.hmask[i % 32] | ((u >> 2) << (i / 32)));
    }
  }
}

namespace {

void quantize_q5_k_block(const float* x, BlockQ5_K& block) {
  fit_q4_k_super_block(x, 31, block.d, block.dmin, block.scales);
  const float d = fp16_to_fp32(block.d), dmin = fp16_to_fp32(block.dmin);
  std::memset(block.qh, 0, sizeof block.qh);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    q4_k_scale_min(block.scales, j, &sc, &m);
    const float scale = d * static_cast<float>(sc), min = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      const int q =
          scale == 0.0f ? 0 : std::clamp(nearest_int((x[32 * j + l] + min) / scale), 0, 31);
      // Sub-block j = 2k (+1): nibble low (high) of qs[32k + l], fifth bit j of qh[l].
      const int k = j / 2;
      uint8_t& byte = block.qs[32 * k + l];
      byte = static_cast<uint8_t>(j % 2 == 0 ? (byte & 0xf0) | (q & 0x0f)
                                             : (byte & 0x0f) | ((q & 0x0f) << 4));
      block.qh[l] = static_cast<uint8_t>(block.qh[l] | ((q >> 4) << j));
    }
  }
}

}  // namespace

void quantize_iq4_xs_block(const float* x, const float* importance, BlockIQ4_XS& block) {
  float scales[8];
  for (int j = 0; j < 8; ++j)
    scales[j] = fit_iq4_scale(x + 32 * j, importance ? importance + 32 * j : nullptr, 32);
  int ls[8];
  block.d = fp32_to_fp16(quantize_signed_scales(scales, 8, 32, ls));
  const float d = fp16_to_fp32(block.d);
  block.scales_h = 0;
  std::memset(block.scales_l, 0, sizeof block.scales_l);
  for (int j = 0; j < 8; ++j) {
    const int biased = ls[j] + 32;
    block.scales_l[j / 2] =
        static_cast<uint8_t>(block.scales_l[j / 2] | ((biased & 0x0f) << (4 * (j % 2))));
    block.scales_h = static_cast<uint16_t>(block.scales_h | ((biased >> 4) << (2 * j)));
    uint8_t q[32];
    quantize_iq4_levels(x + 32 * j, 32, d * static_cast<float>(ls[j]), q);
    for (int l = 0; l < 16; ++l)
      block.qs[16 * j + l] = static_cast<uint8_t>(q[l] | (q[l + 16] << 4));
  }
}

void quantize_iq4_nl_block(const float* x, const float* importance, BlockIQ4_NL& block) {
  constexpr int kN = kQK8_0;
  uint8_t q[kN];
  block.d = fp32_to_fp16(fit_iq4_scale(x, importance, kN));
  quantize_iq4_levels(x, kN, fp16_to_fp32(block.d), q);
  for (int i = 0; i < kN / 2; ++i) block.qs[i] = static_cast<uint8_t>(q[i] | (q[i + kN / 2] << 4));
}

float fit_iq4_scale(const float* x, int n) {
  return fit_iq4_scale(x, nullptr, n);
}

float fit_iq4_scale(const float* x, const float* importance, int n) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-30f) return 0.0f;
  float w[kQK_K];
  rms_weights(x, importance, n, w);
  // Candidate grids put the largest element at level -127 + k (k in [-7, 7]) of the
  // codebook; each gets its least-squares scale, and the best fit wins.
  float best = max / static_cast<float>(kIQ4NLValues[0]);
  double best_score = -1;
  for (int k = -7; k <= 7; ++k) {
    const float inv = (static_cast<float>(kIQ4NLValues[0]) + static_cast<float>(k)) / max;
    double sqx = 0, sqq = 0;
    for (int i = 0; i < n; ++i) {
      const double v = kIQ4NLValues[nearest_iq4_level(inv * x[i])];
      sqx += w[i] * v * x[i];
      sqq += w[i] * v * v;
    }
    if (sqq <= 0) continue;
    const double score = sqx * sqx / sqq;
    if (score > best_score) {
      best_score = score;
      best = static_cast<float>(sqx / sqq);
    }
  }
  return best;
}

void quantize_iq4_levels(const float* x, int n, float d, uint8_t* q) {
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (int i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(nearest_iq4_level(inv * x[i]));
}

void q2_k_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ2_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q2_k_block(src + b * kQK_K, nullptr, blocks[b]);
}

void q3_k_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ3_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q3_k_block(src + b * kQK_K, nullptr, blocks[b]);
}

void q5_k_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ5_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q5_k_block(src + b * kQK_K, blocks[b]);
}

void iq4_xs_from_float(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockIQ4_XS*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b)
    quantize_iq4_xs_block(src + b * kQK_K, nullptr, blocks[b]);
}

}  // namespace strata::kernels::ref
