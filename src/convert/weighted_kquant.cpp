// The importance-weighted block encoders of weighted_quant.h that reuse the plain
// quantizers' fits: Q4_K and Q5_K (affine sub-blocks of 32), Q6_K (symmetric sub-blocks of
// 16), Q2_K (affine, 16), Q3_K (symmetric, 16), IQ4_XS (codebook, 32) and IQ4_NL (one
// codebook block of 32). Each follows the plain quantizer of kernels/quant with the column
// importance multiplied into its fit weights: (rms + |x|) for the affine fits, x^2 for
// the symmetric ones, x^2 + mean square for the IQ4 codebook. Per block (256 elements,
// 32 for IQ4_NL) the result is kept only when its importance-weighted error is below the
// plain quantizer's, so the search never loses to it on that error.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "convert/weighted_quant.h"
#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_ref.h"
#include "kernels/quant/quant_fit.h"
#include "kernels/quant/rounding.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

using kernels::kQK_K;
using kernels::nearest_int;

// Super-block scales of Q4_K / Q5_K (nmax 15 / 31) with weights (rms + |x|) * imp.
void fit_affine_super_block(const float* x, const float* imp, int nmax, uint16_t& d, uint16_t& dmin,
                            uint8_t* scales) {
  double sum_x2 = 0;
  for (int i = 0; i < kQK_K; ++i) sum_x2 += static_cast<double>(x[i]) * x[i];
  const float rms = static_cast<float>(std::sqrt(sum_x2 / kQK_K));
  kernels::ref::AffineFit fits[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float w[32];
    for (int l = 0; l < 32; ++l) w[l] = (rms + std::fabs(x[32 * j + l])) * imp[32 * j + l];
    fits[j] = kernels::ref::fit_affine(x + 32 * j, w, 32, nmax);
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
  kernels::ref::pack_q4_k_scales(ls, lm, scales);
}

// Levels of sub-block j under the block's decoded parameters.
int affine_level(const uint8_t* scales, float d, float dmin, int j, float v, int nmax) {
  int sc, m;
  kernels::ref::q4_k_scale_min(scales, j, &sc, &m);
  const float scale = d * static_cast<float>(sc), min = dmin * static_cast<float>(m);
  return scale == 0.0f ? 0 : std::clamp(nearest_int((v + min) / scale), 0, nmax);
}

void q4_k_block(const float* x, const float* imp, kernels::BlockQ4_K& b) {
  fit_affine_super_block(x, imp, 15, b.d, b.dmin, b.scales);
  const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
  uint8_t q[kQK_K];
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l)
      q[32 * j + l] = static_cast<uint8_t>(affine_level(b.scales, d, dmin, j, x[32 * j + l], 15));
  for (int k = 0; k < 4; ++k)
    for (int l = 0; l < 32; ++l)
      b.qs[32 * k + l] = static_cast<uint8_t>(q[64 * k + l] | (q[64 * k + 32 + l] << 4));
}

void q5_k_block(const float* x, const float* imp, kernels::BlockQ5_K& b) {
  fit_affine_super_block(x, imp, 31, b.d, b.dmin, b.scales);
  const float d = fp16_to_fp32(b.d), dmin = fp16_to_fp32(b.dmin);
  std::memset(b.qh, 0, sizeof b.qh);
  std::memset(b.qs, 0, sizeof b.qs);
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 32; ++l) {
      const int q = affine_level(b.scales, d, dmin, j, x[32 * j + l], 31);
      uint8_t& byte = b.qs[32 * (j / 2) + l];
      byte = static_cast<uint8_t>(j % 2 == 0 ? (byte & 0xf0) | (q & 0x0f)
                                             : (byte & 0x0f) | ((q & 0x0f) << 4));
      b.qh[l] = static_cast<uint8_t>(b.qh[l] | ((q >> 4) << j));
    }
  }
}

void q6_k_block(const float* x, const float* imp, kernels::BlockQ6_K& b) {
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int s = 0; s < 16; ++s) {
    scales[s] = kernels::ref::fit_symmetric(x + 16 * s, imp + 16 * s, 16, 32);
    if (std::fabs(scales[s]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[s]);
      max_scale = scales[s];
    }
  }
  if (max_abs_scale < 1e-15f) {
    b = kernels::BlockQ6_K{};
    return;
  }
  const float inv_scale = -128.0f / max_scale;
  b.d = fp32_to_fp16(1.0f / inv_scale);
  for (int s = 0; s < 16; ++s)
    b.scales[s] = static_cast<int8_t>(std::clamp(nearest_int(inv_scale * scales[s]), -128, 127));
  const float d = fp16_to_fp32(b.d);
  uint8_t q[kQK_K];
  for (int s = 0; s < 16; ++s) {
    const float scale = d * static_cast<float>(b.scales[s]);
    for (int l = 0; l < 16; ++l) {
      const int level = scale == 0.0f ? 0 : std::clamp(nearest_int(x[16 * s + l] / scale), -32, 31);
      q[16 * s + l] = static_cast<uint8_t>(level + 32);
    }
  }
  for (int half = 0; half < 2; ++half) {
    const uint8_t* L = q + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[l], q2 = L[l + 32], q3 = L[l + 64], q4 = L[l + 96];
      b.ql[64 * half + l] = static_cast<uint8_t>((q1 & 0x0f) | ((q3 & 0x0f) << 4));
      b.ql[64 * half + l + 32] = static_cast<uint8_t>((q2 & 0x0f) | ((q4 & 0x0f) << 4));
      b.qh[32 * half + l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
  }
}

double block_error(const float* x, const float* imp, const uint8_t* enc, DType t, int n) {
  float y[kQK_K];
  kernels::reference_type_traits(t).to_float(enc, y, n);
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    e += imp[i] * d * d;
  }
  return e;
}

// Writes one weighted block of type t to out (sizeof the block bytes).
template <typename Block, typename F>
void emit(F&& encode, uint8_t* out) {
  Block b;
  encode(b);
  std::memcpy(out, &b, sizeof b);
}

void weighted_block(const float* x, const float* imp, DType t, uint8_t* out) {
  namespace ref = kernels::ref;
  switch (t) {
    case DType::Q4_K:
      return emit<kernels::BlockQ4_K>([&](auto& b) { q4_k_block(x, imp, b); }, out);
    case DType::Q5_K:
      return emit<kernels::BlockQ5_K>([&](auto& b) { q5_k_block(x, imp, b); }, out);
    case DType::Q6_K:
      return emit<kernels::BlockQ6_K>([&](auto& b) { q6_k_block(x, imp, b); }, out);
    case DType::Q2_K:
      return emit<kernels::BlockQ2_K>([&](auto& b) { ref::quantize_q2_k_block(x, imp, b); }, out);
    case DType::Q3_K:
      return emit<kernels::BlockQ3_K>([&](auto& b) { ref::quantize_q3_k_block(x, imp, b); }, out);
    case DType::IQ4_XS:
      return emit<kernels::BlockIQ4_XS>([&](auto& b) { ref::quantize_iq4_xs_block(x, imp, b); },
                                        out);
    case DType::IQ4_NL:
      return emit<kernels::BlockIQ4_NL>([&](auto& b) { ref::quantize_iq4_nl_block(x, imp, b); },
                                        out);
    default:
      throw Error("no weighted K-quant search for " + std::string(dtype_name(t)));
  }
}

constexpr size_t kMaxBlockBytes =
    std::max({sizeof(kernels::BlockQ4_K), sizeof(kernels::BlockQ5_K), sizeof(kernels::BlockQ6_K),
              sizeof(kernels::BlockQ2_K), sizeof(kernels::BlockQ3_K), sizeof(kernels::BlockIQ4_XS),
              sizeof(kernels::BlockIQ4_NL)});

}  // namespace

bool is_weighted_kquant(DType type) {
  switch (type) {
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS:
    case DType::IQ4_NL:
      return true;
    default:
      return false;
  }
}

void encode_kquant_rows_weighted(const float* src, int64_t rows, int64_t cols, DType type,
                                 const float* importance, uint8_t* dst) {
  if (!is_weighted_kquant(type))
    throw Error("no weighted K-quant search for " + std::string(dtype_name(type)));
  const auto info = dtype_info(type);
  const int n = static_cast<int>(info.block_size);  // 256, or 32 for IQ4_NL
  if (cols <= 0 || cols % n != 0)
    throw Error("encode_rows_searched: row length " + std::to_string(cols) +
                " is not a multiple of " + std::to_string(n));
  const size_t bs = info.type_size;
  const int64_t nb = cols / n;
  const auto& plain = kernels::reference_type_traits(type);
  float imp_block[kQK_K];
  uint8_t mine[kMaxBlockBytes];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const float* x = src + r * cols + b * n;
      // Hostile or dead importance (negative, NaN, Inf) counts as 0; a block with no
      // usable importance left falls back to plain MSE.
      double sw = 0;
      for (int i = 0; i < n; ++i) {
        const float v = importance ? importance[b * n + i] : 1.0f;
        imp_block[i] = std::isfinite(v) && v > 0 ? v : 0.0f;
        sw += imp_block[i];
      }
      if (!(sw > 0)) std::fill(imp_block, imp_block + n, 1.0f);
      uint8_t* out = dst + static_cast<size_t>(r * nb + b) * bs;
      plain.from_float(x, out, n);
      weighted_block(x, imp_block, type, mine);
      if (block_error(x, imp_block, mine, type, n) < block_error(x, imp_block, out, type, n))
        std::memcpy(out, mine, bs);
    }
  }
}

}  // namespace strata
