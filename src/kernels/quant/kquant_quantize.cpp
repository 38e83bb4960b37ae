// Reference quantizers for Q4_K and Q6_K.
//
// Both follow ggml's approach: fit a scale (and for Q4_K a min) to every sub-block by
// weighted least squares over a small grid of candidate quantization grids, quantize those
// per-sub-block parameters to 6 or 8 bits against a per-super-block fp16 scale, and finally
// quantize each element with the parameters as they will be decoded. The results are not
// byte-identical to llama.cpp's, but they decode through the same format definition.
#include <algorithm>
#include <cmath>

#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/quant_fit.h"
#include "kernels/quant/rounding.h"

namespace strata::kernels::ref {

// Fits value = scale * q - min (min >= 0) to x[0..n) with weights w, trying the grid
// anchored at min(x) with nmax + (-1.0, -0.9, ..., +1.0) steps over the range and keeping the
// weighted least-squares (scale, min) with the smallest weighted squared error.
AffineFit fit_affine(const float* x, const float* w, int n, int nmax) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);  // the offset is subtracted, so it can only lower values
  if (hi == lo) return {0.0f, -lo};

  double sw = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    sw += w[i];
    sx += static_cast<double>(w[i]) * x[i];
  }
  auto error = [&](float scale, float offset, const float inv_scale) {
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(nearest_int(inv_scale * (x[i] - offset)), 0, nmax);
      const double diff = static_cast<double>(scale) * q + offset - x[i];
      err += w[i] * diff * diff;
    }
    return err;
  };

  // Plain min/max grid first; each candidate grid then gets its best-fitting scale/offset.
  float best_scale = (hi - lo) / static_cast<float>(nmax);
  float best_offset = lo;
  double best_err = error(best_scale, best_offset, static_cast<float>(nmax) / (hi - lo));
  for (int step = 0; step <= 20; ++step) {
    const float inv_scale = (static_cast<float>(nmax) - 1.0f + 0.1f * step) / (hi - lo);
    double sl = 0, sll = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(nearest_int(inv_scale * (x[i] - lo)), 0, nmax);
      sl += static_cast<double>(w[i]) * q;
      sll += static_cast<double>(w[i]) * q * q;
      slx += static_cast<double>(w[i]) * q * x[i];
    }
    const double det = sw * sll - sl * sl;
    if (det <= 0) continue;
    double scale = (sw * slx - sx * sl) / det;
    double offset = (sll * sx - sl * slx) / det;
    if (offset > 0) {  // best fit wants a positive offset; pin it to zero instead
      offset = 0;
      scale = slx / sll;
    }
    if (!(scale > 0)) continue;
    // Evaluate with the grid the candidate itself implies, as the final quantization will.
    const double err = error(static_cast<float>(scale), static_cast<float>(offset),
                             static_cast<float>(1.0 / scale));
    if (err < best_err) {
      best_err = err;
      best_scale = static_cast<float>(scale);
      best_offset = static_cast<float>(offset);
    }
  }
  return {best_scale, -best_offset};
}

// Fits value = scale * q with q in [-nmax, nmax - 1], weighting each element by x^2 so large
// magnitudes are reproduced best. Tries grids that put the largest element at
// -(nmax + 0.1 k) steps for k in [-9, 9]. The scale may be negative.
float fit_symmetric(const float* x, int n, int nmax) {
  return fit_symmetric(x, nullptr, n, nmax);
}

float fit_symmetric(const float* x, const float* importance, int n, int nmax) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-15f) return 0.0f;
  float best_scale = 0;
  double best_score = -1;  // slx^2 / sll: larger means smaller weighted squared error
  for (int k = -9; k <= 9; ++k) {
    const float inv_scale = -(static_cast<float>(nmax) + 0.1f * k) / max;
    double slx = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      const int q = std::clamp(nearest_int(inv_scale * x[i]), -nmax, nmax - 1);
      double weight = static_cast<double>(x[i]) * x[i];
      if (importance) weight *= importance[i];
      slx += weight * x[i] * q;
      sll += weight * q * q;
    }
    if (sll <= 0) continue;
    const double score = slx * slx / sll;
    if (score > best_score) {
      best_score = score;
      best_scale = static_cast<float>(slx / sll);
    }
  }
  return best_scale;
}

void pack_q4_k_scales(const int* ls, const int* lm, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(ls[j]);
    scales[j + 4] = static_cast<uint8_t>(lm[j]);
  }
  for (int j = 4; j < 8; ++j) {
    scales[j + 4] = static_cast<uint8_t>((ls[j] & 0x0f) | ((lm[j] & 0x0f) << 4));
    scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls[j] >> 4) << 6));
    scales[j] = static_cast<uint8_t>(scales[j] | ((lm[j] >> 4) << 6));
  }
}

void fit_q4_k_super_block(const float* x, int nmax, uint16_t& d, uint16_t& dmin, uint8_t* scales) {
  double sum_x2 = 0;
  for (int i = 0; i < kQK_K; ++i) sum_x2 += static_cast<double>(x[i]) * x[i];
  const float rms = static_cast<float>(std::sqrt(sum_x2 / kQK_K));
  AffineFit fits[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float w[32];
    for (int l = 0; l < 32; ++l) w[l] = rms + std::fabs(x[32 * j + l]);
    fits[j] = fit_affine(x + 32 * j, w, 32, nmax);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  int ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = std::clamp(nearest_int(inv_scale * fits[j].scale), 0, 63);
    lm[j] = std::clamp(nearest_int(inv_min * fits[j].min), 0, 63);
  }
  d = fp32_to_fp16(max_scale / 63.0f);
  dmin = fp32_to_fp16(max_min / 63.0f);
  pack_q4_k_scales(ls, lm, scales);
}

namespace {

void quantize_q4_k_block(const float* x, BlockQ4_K& block) {
  fit_q4_k_super_block(x, 15, block.d, block.dmin, block.scales);

  // Quantize against the parameters exactly as they decode.
  const float d = fp16_to_fp32(block.d);
  const float dmin = fp16_to_fp32(block.dmin);
  uint8_t q[kQK_K];
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    q4_k_scale_min(block.scales, j, &sc, &m);
    const float scale = d * static_cast<float>(sc);
    const float min = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) {
      q[32 * j + l] =
          scale == 0.0f
              ? 0
              : static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + min) / scale), 0, 15));
    }
  }
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * k + l] = static_cast<uint8_t>(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
    }
  }
}

void quantize_q6_k_block(const float* x, BlockQ6_K& block) {
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int s = 0; s < 16; ++s) {
    scales[s] = fit_symmetric(x + 16 * s, 16, 32);
    if (std::fabs(scales[s]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  if (max_abs_scale < 1e-15f) {
    block = BlockQ6_K{};  // zero scales decode every element to 0
    return;
  }
  // The largest scale maps to -128; the others land in [-128, 128], clipped to 127.
  const float inv_scale = -128.0f / max_scale;
  block.d = fp32_to_fp16(1.0f / inv_scale);
  for (int s = 0; s < 16; ++s) {
    block.scales[s] =
        static_cast<int8_t>(std::clamp(nearest_int(inv_scale * scales[s]), -128, 127));
  }
  const float d = fp16_to_fp32(block.d);
  uint8_t q[kQK_K];  // biased quants in [0, 63]
  for (int s = 0; s < 16; ++s) {
    const float scale = d * static_cast<float>(block.scales[s]);
    for (int l = 0; l < 16; ++l) {
      const int level = scale == 0.0f ? 0 : std::clamp(nearest_int(x[16 * s + l] / scale), -32, 31);
      q[16 * s + l] = static_cast<uint8_t>(level + 32);
    }
  }
  for (int half = 0; half < 2; ++half) {
    const uint8_t* L = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[l], q2 = L[l + 32], q3 = L[l + 64], q4 = L[l + 96];
      block.ql[64 * half + l] = static_cast<uint8_t>((q1 & 0x0f) | ((q3 & 0x0f) << 4));
      block.ql[64 * half + l + 32] = static_cast<uint8_t>((q2 & 0x0f) | ((q4 & 0x0f) << 4));
      block.qh[32 * half + l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

}  // namespace

void q4_k_from_float(const float* src, void* dst, int64_t n) {
  BlockQ4_K* blocks = static_cast<BlockQ4_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q4_k_block(src + b * kQK_K, blocks[b]);
}

void q6_k_from_float(const float* src, void* dst, int64_t n) {
  BlockQ6_K* blocks = static_cast<BlockQ6_K*>(dst);
  for (int64_t b = 0; b < n / kQK_K; ++b) quantize_q6_k_block(src + b * kQK_K, blocks[b]);
}

}  // namespace strata::kernels::ref
