// Helpers shared by the kernel tests: deterministic random data, random but valid weight
// rows for every type, and a per-element description of each type's quantization grid
// decoded independently of the library (from the format definition in the test).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/fp16.h"

namespace strata::kernels::test {

// xoshiro-style generator: fast enough to fill tens of megabytes in a test.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ull + 1) {}
  uint64_t next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }
  float uniform(float lo, float hi) {  // [lo, hi)
    return lo + (hi - lo) * static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }
  float normal() {  // Box-Muller
    const float u1 = uniform(1e-7f, 1.0f), u2 = uniform(0.0f, 1.0f);
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
  }

 private:
  uint64_t s_;
};

inline std::vector<float> normal_floats(Rng& rng, int64_t n, float sigma = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = sigma * rng.normal();
  return v;
}

// Weight types the kernels support, and every type with kernels.
inline const std::vector<DType>& weight_types() {
  static const std::vector<DType> types = {DType::F32,  DType::F16,  DType::BF16,   DType::Q8_0,
                                           DType::Q4_0, DType::Q4_K, DType::Q6_K,   DType::Q4_1,
                                           DType::Q5_0, DType::Q5_1, DType::IQ4_NL, DType::Q2_K,
                                           DType::Q3_K, DType::Q5_K, DType::IQ4_XS};
  return types;
}

inline int64_t block_size(DType t) {
  return dtype_info(t).block_size;
}
inline int64_t bytes_for(DType t, int64_t n) {
  return n / block_size(t) * static_cast<int64_t>(dtype_info(t).type_size);
}

inline void put_half(uint8_t* p, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

// `rows` x `cols` weights of type t: random bytes everywhere (every quant bit pattern,
// including Q8_0's -128 and Q6_K's -128 scale), with fp16 scales set to moderate values of
// either sign so that dot products stay finite and meaningful.
inline std::vector<uint8_t> random_weights(DType t, int64_t rows, int64_t cols, Rng& rng) {
  std::vector<uint8_t> w(static_cast<size_t>(bytes_for(t, rows * cols)));
  for (auto& b : w) b = static_cast<uint8_t>(rng.next() >> 56);
  const size_t bs = dtype_info(t).type_size;
  const size_t nblocks = w.size() / bs;
  for (size_t i = 0; i < nblocks; ++i) {
    uint8_t* blk = w.data() + i * bs;
    switch (t) {
      case DType::F32: {
        const float v = rng.uniform(-1.0f, 1.0f);
        std::memcpy(blk, &v, 4);
        break;
      }
      case DType::F16:
        put_half(blk, rng.uniform(-1.0f, 1.0f));
        break;
      case DType::BF16: {
        const uint16_t h = fp32_to_bf16(rng.uniform(-1.0f, 1.0f));
        std::memcpy(blk, &h, 2);
        break;
      }
      case DType::Q8_0:
      case DType::Q4_0:
        put_half(blk, rng.uniform(-0.02f, 0.02f));
        break;
      case DType::Q4_K:  // our quantizer makes d and dmin >= 0, but files need not
        put_half(blk, rng.uniform(-0.004f, 0.004f));      // d
        put_half(blk + 2, rng.uniform(-0.004f, 0.004f));  // dmin
        break;
      case DType::Q6_K:
        put_half(blk + 208, rng.uniform(-0.001f, 0.001f));
        break;
      case DType::Q5_0:
        put_half(blk, rng.uniform(-0.01f, 0.01f));
        break;
      case DType::Q4_1:  // d and the offset m
      case DType::Q5_1:
        put_half(blk, rng.uniform(-0.01f, 0.01f));
        put_half(blk + 2, rng.uniform(-0.1f, 0.1f));
        break;
      case DType::IQ4_NL:
        put_half(blk, rng.uniform(-0.002f, 0.002f));
        break;
      case DType::Q2_K:
        put_half(blk + 80, rng.uniform(-0.004f, 0.004f));  // d
        put_half(blk + 82, rng.uniform(-0.004f, 0.004f));  // dmin
        break;
      case DType::Q3_K:
        put_half(blk + 108, rng.uniform(-0.002f, 0.002f));
        break;
      case DType::Q5_K:
        put_half(blk, rng.uniform(-0.002f, 0.002f));
        put_half(blk + 2, rng.uniform(-0.002f, 0.002f));
        break;
      case DType::IQ4_XS:
        put_half(blk, rng.uniform(-0.0005f, 0.0005f));
        break;
      default:
        break;
    }
  }
  return w;
}

// Decoded quantization grid of one element: representable values are scale * q + offset
// for integer q in [qmin, qmax]. Written from the format definitions, not the library.
struct Grid {
  float scale, offset;
  int qmin, qmax;
};

inline void q4_k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

inline float half_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return fp16_to_fp32(h);
}

// The 6-bit scale (biased by 32) of sub-block s of a Q3_K block's 12 scale bytes.
inline int q3_k_scale(const uint8_t* s, int sub) {
  const int low = sub < 8 ? s[sub] & 15 : s[sub - 8] >> 4;
  return low | (((s[8 + sub % 4] >> (2 * (sub / 4))) & 3) << 4);
}

// Grid of element i of a quantized row (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the K-quants);
// IQ4_NL and IQ4_XS have no uniform grid.
inline Grid grid_of(DType t, const uint8_t* row, int64_t i) {
  const size_t bs = dtype_info(t).type_size;
  const uint8_t* blk = row + static_cast<size_t>(i / block_size(t)) * bs;
  const int64_t e = i % block_size(t);
  switch (t) {
    case DType::Q8_0:
      return {half_at(blk), 0.0f, -128, 127};
    case DType::Q4_0:
      return {half_at(blk), -8.0f * half_at(blk), 0, 15};
    case DType::Q4_K: {
      int sc, m;
      q4_k_scale_min(blk + 4, static_cast<int>(e / 32), &sc, &m);
      return {half_at(blk) * static_cast<float>(sc), -(half_at(blk + 2) * static_cast<float>(m)), 0,
              15};
    }
    case DType::Q6_K: {
      const float s =
          half_at(blk + 208) * static_cast<float>(static_cast<int8_t>(blk[192 + e / 16]));
      return {s, -32.0f * s, 0, 63};
    }
    case DType::Q4_1:
      return {half_at(blk), half_at(blk + 2), 0, 15};
    case DType::Q5_0:
      return {half_at(blk), -16.0f * half_at(blk), 0, 31};
    case DType::Q5_1:
      return {half_at(blk), half_at(blk + 2), 0, 31};
    case DType::Q2_K: {
      const uint8_t sc = blk[e / 16];
      return {half_at(blk + 80) * static_cast<float>(sc & 15),
              -(half_at(blk + 82) * static_cast<float>(sc >> 4)), 0, 3};
    }
    case DType::Q3_K:
      return {half_at(blk + 108) *
                  static_cast<float>(q3_k_scale(blk + 96, static_cast<int>(e / 16)) - 32),
              0.0f, -4, 3};
    case DType::Q5_K: {
      int sc, m;
      q4_k_scale_min(blk + 4, static_cast<int>(e / 32), &sc, &m);
      return {half_at(blk) * static_cast<float>(sc), -(half_at(blk + 2) * static_cast<float>(m)), 0,
              31};
    }
    default:
      return {0, 0, 0, 0};
  }
}

// |error| of the representable value nearest to x on grid g.
inline double nearest_level_error(const Grid& g, double x) {
  if (g.scale == 0.0f) return std::fabs(x - g.offset);
  double q = std::nearbyint((x - g.offset) / g.scale);
  double best = 1e300;
  for (double c = q - 1; c <= q + 1; ++c) {
    const double cq = std::fmin(std::fmax(c, g.qmin), g.qmax);
    best = std::fmin(best, std::fabs(x - (static_cast<double>(g.scale) * cq + g.offset)));
  }
  return best;
}

// Magnitude bound of each weight's contribution as the optimized kernels compute it:
// |w| for most types; for the types with an offset (Q4_K, Q5_K, Q2_K, Q4_1, Q5_1) the
// scaled quant and the offset are summed separately, so |scale * q| + |offset|, which can
// exceed |w| when they cancel.
inline std::vector<double> weight_magnitudes(DType t, const uint8_t* row, const float* deq,
                                             int64_t n) {
  std::vector<double> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q2_K || t == DType::Q4_1 ||
        t == DType::Q5_1) {
      const Grid g = grid_of(t, row, i);
      m[i] = std::fabs(static_cast<double>(deq[i]) - g.offset) + std::fabs(g.offset);
    } else {
      m[i] = std::fabs(deq[i]);
    }
  }
  return m;
}

// Unit roundoff of float.
inline constexpr double kU = 1.0 / (1 << 24);

// Bound on |optimized vec_dot - exact| for n elements with magnitude sum `mag`
// (sum over i of magnitude(w_i) * |a_i|). Every optimized kernel reduces exact integer or
// fma partial sums in chains of at most n/16 + 8 float roundings (the longest is the
// F32/F16/BF16 kernel's n/32 fma per lane plus the 3-step lane reduction and a tail of up
// to 7; Q8_0/Q4_0 add n/64 blocks per lane, Q4_K/Q6_K 2 per 256 elements), and each
// rounding changes a partial sum bounded by `mag` by at most u * mag. Four more roundings
// cover the scale products and the dequantized values the references start from.
inline double dot_tolerance(int64_t n, double mag) {
  return (static_cast<double>(n) / 16.0 + 12.0) * kU * mag;
}

}  // namespace strata::kernels::test
