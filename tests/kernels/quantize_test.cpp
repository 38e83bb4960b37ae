// Quantizers: activation quantizers agree byte for byte across tables, and from_float ->
// to_float errors stay within bounds that follow from each format's grid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

// Rows whose blocks cover ordinary and awkward cases: per-block magnitudes from 1e-6 to 1e4,
// an all-zero block, a block of tiny values whose scale underflows, exact rounding ties, all
// positive, all negative, constant, one spike among zeros, and sub-blocks of very different
// sizes within one super-block.
std::vector<float> awkward_floats(Rng& rng, int64_t block, int64_t n_blocks) {
  std::vector<float> x(static_cast<size_t>(block * n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) {
    float* v = x.data() + b * block;
    const float sigma = std::pow(10.0f, rng.uniform(-6.0f, 4.0f));
    for (int64_t i = 0; i < block; ++i) {
      switch (b % 10) {
        case 0:
          v[i] = 0.0f;
          break;
        case 1:
          v[i] = 1e-35f * rng.normal();
          break;
        case 2:
          v[i] = static_cast<float>((i % 255) - 127) + (i == 0 ? 0.0f : 0.5f);
          break;  // ties
        case 3:
          v[i] = std::fabs(sigma * rng.normal()) + sigma;
          break;
        case 4:
          v[i] = -std::fabs(sigma * rng.normal());
          break;
        case 5:
          v[i] = 3.25f;
          break;
        case 6:
          v[i] = i == block / 3 ? -sigma : 0.0f;
          break;
        case 7:
          v[i] = (i / 16) % 2 == 0 ? 1e-3f * rng.normal() : 10.0f * rng.normal();
          break;
        default:
          v[i] = sigma * rng.normal();
          break;
      }
    }
    if (b % 10 == 2) v[0] = 127.0f;  // amax 127 makes the Q8 scales exactly 1
  }
  return x;
}

TEST(Quantize, ActivationQuantizersMatchReferenceBytes) {
  Rng rng(1);
  for (DType t : {DType::Q8_0, DType::Q8_K}) {
    const int64_t bs = test::block_size(t);
    const std::vector<float> x = awkward_floats(rng, bs, 40);
    const auto n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> ref(static_cast<size_t>(test::bytes_for(t, n))), fast(ref.size());
    reference_type_traits(t).from_float(x.data(), ref.data(), n);
    type_traits(t).from_float(x.data(), fast.data(), n);
    EXPECT_EQ(ref, fast) << dtype_name(t);
  }
}

TEST(Quantize, Q8_KBlockSumsMatchQuants) {
  Rng rng(2);
  const std::vector<float> x = awkward_floats(rng, 256, 20);
  std::vector<BlockQ8_K> blocks(20);
  type_traits(DType::Q8_K).from_float(x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  for (const auto& b : blocks) {
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += b.qs[16 * k + i];
      ASSERT_EQ(b.bsums[k], sum);
    }
  }
}

struct RoundTrip {
  std::vector<float> x, deq;
  std::vector<uint8_t> bytes;
};

RoundTrip round_trip(DType t, const std::vector<float>& x) {
  RoundTrip r{x, std::vector<float>(x.size()), {}};
  const auto n = static_cast<int64_t>(x.size());
  r.bytes.resize(static_cast<size_t>(test::bytes_for(t, n)));
  type_traits(t).from_float(x.data(), r.bytes.data(), n);
  type_traits(t).to_float(r.bytes.data(), r.deq.data(), n);
  return r;
}

// Every quantizer must pick, for each element, the nearest value its block can represent
// once the block's scales are fixed (up to the rounding of x / scale in float).
void expect_nearest_levels(DType t, const RoundTrip& r) {
  for (size_t i = 0; i < r.x.size(); ++i) {
    const test::Grid g = test::grid_of(t, r.bytes.data(), static_cast<int64_t>(i));
    const double err = std::fabs(static_cast<double>(r.x[i]) - r.deq[i]);
    const double best = test::nearest_level_error(g, r.x[i]);
    const double slack =
        1e-5 * std::fabs(g.scale) + 1e-6 * (std::fabs(r.x[i]) + std::fabs(g.offset));
    ASSERT_LE(err, best + slack) << dtype_name(t) << " element " << i << " x=" << r.x[i] << " got "
                                 << r.deq[i];
    ASSERT_TRUE(std::isfinite(r.deq[i]));
  }
}

// Q8_0: quants are round(x / d) with d the stored fp16 scale, at least amax / 127, so every
// element is within half a step, d / 2; the relative rounding of x * (1 / d) adds at most
// 2 * 127 * 2^-24 steps.
TEST(Quantize, Q8_0WithinHalfStep) {
  Rng rng(3);
  const RoundTrip r = round_trip(DType::Q8_0, awkward_floats(rng, 32, 400));
  for (size_t i = 0; i < r.x.size(); ++i) {
    const double d =
        std::fabs(test::grid_of(DType::Q8_0, r.bytes.data(), static_cast<int64_t>(i)).scale);
    const double err = std::fabs(static_cast<double>(r.x[i]) - r.deq[i]);
    const double bound = 0.5 * d * (1 + 1e-4);
    ASSERT_LE(err, bound) << "element " << i << " x=" << r.x[i];
  }
  expect_nearest_levels(DType::Q8_0, r);
}

// Q4_0: the largest-magnitude element maps to level -8 (d is rounded to fp16 away from zero
// if needed to keep it there), so elements within 7.5 steps on the other side are within
// half a step; beyond that they clip to +7, at most 8 * (1 + 2^-11) - 7 < 1.005 steps away.
TEST(Quantize, Q4_0WithinHalfStepUnlessClipped) {
  Rng rng(4);
  const RoundTrip r = round_trip(DType::Q4_0, awkward_floats(rng, 32, 400));
  for (size_t i = 0; i < r.x.size(); ++i) {
    const double d = test::grid_of(DType::Q4_0, r.bytes.data(), static_cast<int64_t>(i)).scale;
    const double err = std::fabs(static_cast<double>(r.x[i]) - r.deq[i]);
    if (d == 0) {
      ASSERT_EQ(r.x[i], 0.0f) << i;  // only an all-zero block gets d = 0
      continue;
    }
    const double steps = r.x[i] / d;  // in [-8, 8.004]
    const double bound = steps <= 7.5 ? 0.5 * std::fabs(d) * (1 + 1e-4) : 1.005 * std::fabs(d);
    ASSERT_LE(err, bound) << "element " << i << " x=" << r.x[i] << " d=" << d;
  }
  expect_nearest_levels(DType::Q4_0, r);
}

TEST(Quantize, KQuantsPickNearestLevelsOnAwkwardData) {
  Rng rng(5);
  for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q2_K, DType::Q3_K, DType::Q5_K}) {
    const RoundTrip r = round_trip(t, awkward_floats(rng, 256, 60));
    expect_nearest_levels(t, r);
    for (size_t i = 0; i < 256; ++i) ASSERT_EQ(r.deq[i], 0.0f) << "zero block, " << dtype_name(t);
  }
}

// On Gaussian data (sigma = 1) a uniform grid with step s has RMS error s / sqrt(12).
// Q6_K: 16-element sub-blocks, largest |x| ~ 2.0 (median of the maximum of 16) spread over
// 32 steps -> s ~ 0.063, RMS ~ 0.018. Q4_K: 32-element sub-blocks span ~ 4.1 over 15 steps ->
// s ~ 0.27, RMS ~ 0.079, which the scale/min search lowers by trading clipping for a finer
// step. The bounds allow 15% over those figures for the 6/8-bit rounding of the scales;
// a broken search or packing shows up as several times more.
TEST(Quantize, KQuantsRmsErrorOnGaussianData) {
  Rng rng(6);
  const std::vector<float> x = test::normal_floats(rng, 256 * 400);
  for (auto [t, bound] :
       {std::pair{DType::Q4_K, 0.079 * 1.15}, std::pair{DType::Q6_K, 0.018 * 1.15}}) {
    const RoundTrip r = round_trip(t, x);
    double sq = 0;
    for (size_t i = 0; i < x.size(); ++i) sq += std::pow(static_cast<double>(x[i]) - r.deq[i], 2);
    const double rms = std::sqrt(sq / static_cast<double>(x.size()));
    RecordProperty(std::string(dtype_name(t)) + "_rms", std::to_string(rms));
    EXPECT_LE(rms, bound) << dtype_name(t);
    expect_nearest_levels(t, r);
  }
}

// The 32-element types on awkward data: nearest levels on their grids, finite values, and
// an all-zero block decodes to zeros.
TEST(Quantize, LegacyTypesPickNearestLevelsOnAwkwardData) {
  Rng rng(9);
  for (DType t : {DType::Q4_1, DType::Q5_0, DType::Q5_1}) {
    const RoundTrip r = round_trip(t, awkward_floats(rng, 32, 400));
    expect_nearest_levels(t, r);
    for (size_t i = 0; i < 32; ++i) ASSERT_EQ(r.deq[i], 0.0f) << "zero block, " << dtype_name(t);
  }
}

// IQ4_NL / IQ4_XS have a non-uniform codebook: each element must decode to the codebook
// entry nearest to it for its block's (sub-block's) scale, which to_float of a block whose
// quants are all 0..15 in turn reveals.
TEST(Quantize, Iq4TypesPickNearestCodebookEntry) {
  Rng rng(10);
  for (DType t : {DType::IQ4_NL, DType::IQ4_XS}) {
    const int64_t bs = test::block_size(t);
    const RoundTrip r = round_trip(t, awkward_floats(rng, bs, 40));
    const int64_t group = 32;  // elements that share one scale in both types
    for (size_t g = 0; g < r.x.size() / group; ++g) {
      // The 16 values this group can take: the decoded block with every nibble set to k.
      std::vector<uint8_t> probe(
          r.bytes.begin() +
              static_cast<int64_t>(g * group / bs) * static_cast<int64_t>(dtype_info(t).type_size),
          r.bytes.begin() + static_cast<int64_t>(g * group / bs + 1) *
                                static_cast<int64_t>(dtype_info(t).type_size));
      const size_t qs = t == DType::IQ4_NL ? 2 : 8;
      const size_t sub = (g * group % bs) / group;  // sub-block within the block
      std::vector<float> levels(16);
      for (int k = 0; k < 16; ++k) {
        for (size_t j = qs; j < probe.size(); ++j) probe[j] = static_cast<uint8_t>(k | (k << 4));
        std::vector<float> dec(static_cast<size_t>(bs));
        type_traits(t).to_float(probe.data(), dec.data(), bs);
        levels[static_cast<size_t>(k)] = dec[sub * group];
      }
      for (size_t i = g * group; i < (g + 1) * group; ++i) {
        double best = 1e300;
        for (float v : levels) best = std::fmin(best, std::fabs(static_cast<double>(r.x[i]) - v));
        const double err = std::fabs(static_cast<double>(r.x[i]) - r.deq[i]);
        ASSERT_TRUE(std::isfinite(r.deq[i]));
        ASSERT_LE(err, best + 1e-6 * std::fabs(r.x[i]) + 1e-30)
            << dtype_name(t) << " element " << i << " x=" << r.x[i] << " got " << r.deq[i];
      }
    }
  }
}

// RMS error on Gaussian data (sigma = 1) against what each grid allows, derived as for
// the K-quants above: a uniform step s gives s / sqrt(12); the step is the block's expected
// range (or largest magnitude) over its levels. Q4_1 / Q5_1: 32 elements span ~4.1 over
// 15 / 31 steps -> RMS ~ 0.079 / 0.038. Q5_0: largest |x| of 32 ~ 2.3 over 16 steps ->
// 0.041. Q5_K: 32-element sub-blocks, 4.1 over 31 steps -> 0.038. Q3_K: 16 elements,
// largest |x| ~ 1.95 over 4 steps -> 0.14. Q2_K: 16 elements span ~3.5 over 3 steps ->
// 0.34 (clipping helps both). IQ4: 16 levels denser near zero, at least as good as the
// 4-bit uniform grids on a bell shape: the Q4_1 figure. 15% slack as above.
TEST(Quantize, NewTypesRmsErrorOnGaussianData) {
  Rng rng(11);
  const std::vector<float> x = test::normal_floats(rng, 256 * 200);
  for (auto [t, bound] :
       {std::pair{DType::Q4_1, 0.079}, std::pair{DType::Q5_1, 0.038}, std::pair{DType::Q5_0, 0.041},
        std::pair{DType::Q5_K, 0.038}, std::pair{DType::Q3_K, 0.14}, std::pair{DType::Q2_K, 0.34},
        std::pair{DType::IQ4_NL, 0.079}, std::pair{DType::IQ4_XS, 0.079}}) {
    const RoundTrip r = round_trip(t, x);
    double sq = 0;
    for (size_t i = 0; i < x.size(); ++i) sq += std::pow(static_cast<double>(x[i]) - r.deq[i], 2);
    const double rms = std::sqrt(sq / static_cast<double>(x.size()));
    RecordProperty(std::string(dtype_name(t)) + "_rms", std::to_string(rms));
    EXPECT_LE(rms, bound * 1.15) << dtype_name(t);
    std::printf("%s rms %.4f (bound %.4f)\n", std::string(dtype_name(t)).c_str(), rms,
                bound * 1.15);
  }
}

TEST(Quantize, PlainFloatRoundTrips) {
  Rng rng(8);
  const std::vector<float> x = test::normal_floats(rng, 1000);
  EXPECT_EQ(round_trip(DType::F32, x).deq, x);
  // F16/BF16 rounding itself is checked exhaustively in fp16_test.cpp; here: within half an
  // ulp (2^-11 and 2^-8 relative), or for F16 subnormals half the smallest step, 2^-25.
  for (auto [t, rel, abs] : {std::tuple{DType::F16, std::ldexp(1.0, -11), std::ldexp(1.0, -25)},
                             std::tuple{DType::BF16, std::ldexp(1.0, -8), 0.0}}) {
    const RoundTrip r = round_trip(t, x);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::fabs(static_cast<double>(x[i]) - r.deq[i]), rel * std::fabs(x[i]) + abs) << i;
    }
  }
}

}  // namespace
}  // namespace strata::kernels
