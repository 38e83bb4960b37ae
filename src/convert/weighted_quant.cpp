#include "convert/weighted_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/quant_fit.h"
#include "kernels/quant/rounding.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

using kernels::kQK8_0;
constexpr int kN = kQK8_0;

struct Levels {
  int qmin, qmax;
  bool affine;
};

Levels levels_of(DType t) {
  switch (t) {
    case DType::Q4_0:
      return {-8, 7, false};
    case DType::Q5_0:
      return {-16, 15, false};
    case DType::Q8_0:
      return {-127, 127, false};
    case DType::Q4_1:
      return {0, 15, true};
    case DType::Q5_1:
      return {0, 31, true};
    default:
      throw Error("no weighted scale search for " + std::string(dtype_name(t)));
  }
}

struct Fit {
  uint16_t d = 0, m = 0;  // fp16 bits
  int q[kN] = {};
  double err = -1;
};

// Levels and weighted error of one block under stored parameters (d, m); `clipped` says
// whether any element fell outside the grid by more than half a step.
void evaluate(const float* x, const float* w, const Levels& lv, uint16_t dh, uint16_t mh, Fit& f,
              bool& clipped) {
  const float d = fp16_to_fp32(dh), m = lv.affine ? fp16_to_fp32(mh) : 0.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  f.d = dh;
  f.m = mh;
  f.err = 0;
  clipped = false;
  for (int i = 0; i < kN; ++i) {
    const float t = (x[i] - m) * id;
    if (t < lv.qmin - 0.5f || t > lv.qmax + 0.5f) clipped = true;
    f.q[i] = std::clamp(kernels::nearest_int(t), lv.qmin, lv.qmax);
    const double diff = static_cast<double>(x[i]) - (static_cast<double>(d) * f.q[i] + m);
    f.err += w[i] * diff * diff;
  }
}

void consider(const float* x, const float* w, const Levels& lv, uint16_t dh, uint16_t mh,
              bool allow_clip, Fit& best) {
  Fit f;
  bool clipped = false;
  evaluate(x, w, lv, dh, mh, f, clipped);
  if (clipped && !allow_clip) return;
  if (best.err < 0 || f.err < best.err) best = f;
}

// The plain quantizers' parameters (kernels/quant/legacy_ref.cpp, legacy_ext_ref.cpp).
void plain_params(const float* x, DType t, uint16_t& dh, uint16_t& mh) {
  mh = 0;
  if (t == DType::Q4_1 || t == DType::Q5_1) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < kN; ++i) lo = std::min(lo, x[i]), hi = std::max(hi, x[i]);
    dh = fp32_to_fp16((hi - lo) / (t == DType::Q4_1 ? 15.0f : 31.0f));
    mh = fp32_to_fp16(lo);
    return;
  }
  float amax = 0, max = 0;
  for (int i = 0; i < kN; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  if (t == DType::Q8_0) {
    dh = fp32_to_fp16(amax / 127.0f);
    if (fp16_to_fp32(dh) * 127.0f < amax) ++dh;
    return;
  }
  const float nmax = t == DType::Q4_0 ? 8.0f : 16.0f;
  dh = fp32_to_fp16(max / -nmax);
  if (std::fabs(fp16_to_fp32(dh)) * nmax < amax) ++dh;
}

Fit fit_block(const float* x, const float* w, DType t, OutlierPolicy outliers) {
  const Levels lv = levels_of(t);
  const bool clip = outliers == OutlierPolicy::clip;
  Fit best;
  uint16_t dh, mh;
  plain_params(x, t, dh, mh);
  consider(x, w, lv, dh, mh, true, best);  // the plain quantizer's result always qualifies
  if (lv.affine) {
    const auto a = kernels::ref::fit_affine(x, w, kN, lv.qmax);
    if (a.scale > 0) consider(x, w, lv, fp32_to_fp16(a.scale), fp32_to_fp16(-a.min), clip, best);
    return best;
  }
  float amax = 0, max = 0;
  for (int i = 0; i < kN; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  if (amax < 1e-15f) return best;
  // Q8_0's grid is symmetric (+-127): anchor the largest element on its own side.
  const float anchor = t == DType::Q8_0 ? -amax : max;
  const float nmax = static_cast<float>(-lv.qmin);
  auto try_grid = [&](float a) {
    const float d0 = anchor / -a;
    consider(x, w, lv, fp32_to_fp16(d0), 0, clip, best);
    double sxq = 0, sqq = 0;
    for (int i = 0; i < kN; ++i) {
      const int q = std::clamp(kernels::nearest_int(x[i] / d0), lv.qmin, lv.qmax);
      sxq += static_cast<double>(w[i]) * x[i] * q;
      sqq += static_cast<double>(w[i]) * q * q;
    }
    if (sqq > 0) consider(x, w, lv, fp32_to_fp16(static_cast<float>(sxq / sqq)), 0, clip, best);
  };
  for (int k = -10; k <= 4; ++k) try_grid(nmax + 0.1f * static_cast<float>(k));
  if (clip)
    for (int j = 1; j <= 10; ++j) try_grid(nmax * (1.0f + 0.05f * static_cast<float>(j)));
  return best;
}

void pack(const Fit& f, DType t, uint8_t* dst) {
  const int h = kN / 2;
  switch (t) {
    case DType::Q8_0: {
      kernels::BlockQ8_0 b;
      b.d = f.d;
      for (int i = 0; i < kN; ++i) b.qs[i] = static_cast<int8_t>(f.q[i]);
      std::memcpy(dst, &b, sizeof b);
      return;
    }
    case DType::Q4_0: {
      kernels::BlockQ4_0 b;
      b.d = f.d;
      for (int i = 0; i < h; ++i)
        b.qs[i] = static_cast<uint8_t>((f.q[i] + 8) | ((f.q[i + h] + 8) << 4));
      std::memcpy(dst, &b, sizeof b);
      return;
    }
    case DType::Q4_1: {
      kernels::BlockQ4_1 b;
      b.d = f.d;
      b.m = f.m;
      for (int i = 0; i < h; ++i) b.qs[i] = static_cast<uint8_t>(f.q[i] | (f.q[i + h] << 4));
      std::memcpy(dst, &b, sizeof b);
      return;
    }
    case DType::Q5_0:
    case DType::Q5_1: {
      const int bias = t == DType::Q5_0 ? 16 : 0;
      uint8_t qs[kN / 2];
      uint32_t qh = 0;
      for (int i = 0; i < h; ++i) {
        const int a = f.q[i] + bias, b = f.q[i + h] + bias;
        qs[i] = static_cast<uint8_t>((a & 0x0f) | ((b & 0x0f) << 4));
        qh |= static_cast<uint32_t>(a >> 4) << i;
        qh |= static_cast<uint32_t>(b >> 4) << (i + h);
      }
      if (t == DType::Q5_0) {
        kernels::BlockQ5_0 b;
        b.d = f.d;
        std::memcpy(b.qh, &qh, 4);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
      } else {
        kernels::BlockQ5_1 b;
        b.d = f.d;
        b.m = f.m;
        std::memcpy(b.qh, &qh, 4);
        std::memcpy(b.qs, qs, sizeof qs);
        std::memcpy(dst, &b, sizeof b);
      }
      return;
    }
    default:
      throw Error("no weighted scale search for " + std::string(dtype_name(t)));
  }
}

}  // namespace

bool has_weighted_search(DType type) {
  return is_weighted_kquant(type) || type == DType::Q4_0 || type == DType::Q5_0 ||
         type == DType::Q8_0 || type == DType::Q4_1 || type == DType::Q5_1;
}

std::vector<uint8_t> encode_rows_searched(const float* src, int64_t rows, int64_t cols, DType type,
                                          const float* importance, OutlierPolicy outliers) {
  if (is_weighted_kquant(type)) {
    std::vector<uint8_t> out(static_cast<size_t>(rows) *
                             static_cast<size_t>(kernels::row_bytes(type, cols)));
    encode_kquant_rows_weighted(src, rows, cols, type, importance, out.data());
    return out;
  }
  levels_of(type);  // throws for types without a search
  const auto info = dtype_info(type);
  if (cols <= 0 || cols % kN != 0)
    throw Error("encode_rows_searched: row length " + std::to_string(cols) +
                " is not a multiple of 32");
  const int64_t nb = cols / kN;
  std::vector<uint8_t> out(static_cast<size_t>(rows * nb) * info.type_size);
  float w[kN];
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      double sw = 0;
      for (int i = 0; i < kN; ++i) {
        w[i] = importance ? importance[b * kN + i] : 1.0f;
        sw += w[i];
      }
      if (!(sw > 0)) std::fill(w, w + kN, 1.0f);  // dead channels: plain MSE
      const Fit f = fit_block(src + r * cols + b * kN, w, type, outliers);
      pack(f, type, out.data() + static_cast<size_t>(r * nb + b) * info.type_size);
    }
  }
  return out;
}

double weighted_sq_error(const float* src, const uint8_t* encoded, int64_t rows, int64_t cols,
                         DType type, const float* importance) {
  const auto& tr = kernels::reference_type_traits(type);
  const size_t rb = static_cast<size_t>(kernels::row_bytes(type, cols));
  std::vector<float> y(static_cast<size_t>(cols));
  double err = 0;
  for (int64_t r = 0; r < rows; ++r) {
    tr.to_float(encoded + static_cast<size_t>(r) * rb, y.data(), cols);
    for (int64_t j = 0; j < cols; ++j) {
      const double d = static_cast<double>(src[r * cols + j]) - y[static_cast<size_t>(j)];
      err += (importance ? importance[j] : 1.0) * d * d;
    }
  }
  return err;
}

}  // namespace strata
