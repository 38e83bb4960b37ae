// F16 and BF16 conversions against brute-force nearest-value searches, for the core
// conversions (core/fp16.h) and for both kernel tables (scalar and AVX2).
#include "core/fp16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

// Value of a half from its fields, in double: (-1)^s * 2^(e-15) * 1.m, or 2^-14 * 0.m.
double half_value(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v;
  if (exp == 0) {
    v = std::ldexp(mant, -24);
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(1024 + mant, exp - 25);
  }
  return sign ? -v : v;
}

// Nearest half to f with ties to even, by binary search over the positive halves
// 0x0000..0x7c00 (ordered like their values; 0x7c00 = inf stands for 2^16 when rounding).
uint16_t nearest_half(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return 0xffff;  // marker: any NaN
  const double a = std::fabs(static_cast<double>(f));
  auto value = [](uint16_t h) { return h == 0x7c00 ? 65536.0 : half_value(h); };
  if (a >= 65536.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7c00;  // value(lo) <= a < value(hi)
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (value(mid) <= a ? lo : hi) = mid;
  }
  const double dlo = a - value(lo), dhi = value(hi) - a;
  const uint16_t pick = dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) == 0 ? lo : hi);
  return sign | pick;
}

// Nearest bfloat16 to f with ties to even (the upper 16 bits of a float, so the two
// candidates are f's bits truncated and that plus one bf16 ulp; inf stands for 2^128).
uint16_t nearest_bf16(float f) {
  if (std::isnan(f)) return 0xffff;
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint16_t lo = static_cast<uint16_t>(bits >> 16);
  if ((bits & 0xffff) == 0) return lo;
  const uint16_t hi = static_cast<uint16_t>(lo + 1);
  auto value = [](uint16_t h) {
    if ((h & 0x7fff) == 0x7f80) return std::ldexp((h & 0x8000) ? -1.0 : 1.0, 128);
    return static_cast<double>(bf16_to_fp32(h));
  };
  const double x = f;
  const double dlo = std::fabs(x - value(lo)), dhi = std::fabs(value(hi) - x);
  return dlo < dhi ? lo : dhi < dlo ? hi : ((lo & 1) == 0 ? lo : hi);
}

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Floats that stress half rounding: every half value, its float neighbours, the exact
// midpoint to the next half (a tie) and the midpoint's neighbours, with both signs, plus
// random bit patterns over the whole float range.
std::vector<float> half_probe_floats() {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const float x = static_cast<float>(half_value(static_cast<uint16_t>(h)));
    const float mid = static_cast<float>(
        (half_value(static_cast<uint16_t>(h)) +
         (h + 1 == 0x7c00 ? 65536.0 : half_value(static_cast<uint16_t>(h + 1)))) /
        2);
    for (float f : {x, std::nextafter(x, 0.0f), std::nextafter(x, INFINITY), mid,
                    std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(f);
      v.push_back(-f);
    }
  }
  for (float f : {INFINITY, -INFINITY, NAN, -NAN, 65519.996f, 65520.0f, 1e-30f, 2.9802322e-08f,
                  2.9802326e-08f, from_bits(0x7f800001), from_bits(0xffc12345), from_bits(1)}) {
    v.push_back(f);
  }
  Rng rng(7);
  for (int i = 0; i < 1 << 20; ++i) v.push_back(from_bits(static_cast<uint32_t>(rng.next())));
  return v;
}

::testing::AssertionResult same_half(uint16_t got, uint16_t want, float f, const char* who) {
  if (want == 0xffff) {  // NaN: strata's conversions all give the sign plus 0x7e00
    want = static_cast<uint16_t>((std::signbit(f) ? 0x8000 : 0) | 0x7e00);
  }
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << who << ": input bits 0x" << std::hex << fp32_to_bits(f)
                                       << " gave 0x" << got << ", nearest is 0x" << want;
}

TEST(Fp16, DecodesEveryHalfExactly) {
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = static_cast<uint16_t>(h);
  std::vector<float> ref(65536), fast(65536);
  reference_type_traits(DType::F16).to_float(all.data(), ref.data(), 65536);
  type_traits(DType::F16).to_float(all.data(), fast.data(), 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = half_value(static_cast<uint16_t>(h));
    for (float got : {fp16_to_fp32(static_cast<uint16_t>(h)), ref[h], fast[h]}) {
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(got)) << h;
        ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;
      } else {
        ASSERT_EQ(static_cast<double>(got), want) << h;
        ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << h;  // -0 stays -0
      }
    }
  }
}

TEST(Fp16, EncodesToNearestEvenHalf) {
  const std::vector<float> probes = half_probe_floats();
  const auto n = static_cast<int64_t>(probes.size());
  std::vector<uint16_t> ref(probes.size()), fast(probes.size());
  reference_type_traits(DType::F16).from_float(probes.data(), ref.data(), n);
  type_traits(DType::F16).from_float(probes.data(), fast.data(), n);
  for (size_t i = 0; i < probes.size(); ++i) {
    const float f = probes[i];
    const uint16_t want = nearest_half(f);
    ASSERT_TRUE(same_half(fp32_to_fp16(f), want, f, "core"));
    ASSERT_TRUE(same_half(ref[i], want, f, "reference table"));
    ASSERT_TRUE(same_half(fast[i], want, f, "fast table"));
  }
}

TEST(Bf16, DecodesAndEncodesLikeNearestEven) {
  std::vector<float> probes;
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint32_t base = h << 16;
    for (uint32_t low : {0u, 1u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu})
      probes.push_back(from_bits(base | low));
    ASSERT_EQ(fp32_to_bits(bf16_to_fp32(static_cast<uint16_t>(h))), base);
  }
  Rng rng(11);
  for (int i = 0; i < 1 << 20; ++i) probes.push_back(from_bits(static_cast<uint32_t>(rng.next())));
  const auto n = static_cast<int64_t>(probes.size());
  std::vector<uint16_t> ref(probes.size()), fast(probes.size());
  reference_type_traits(DType::BF16).from_float(probes.data(), ref.data(), n);
  type_traits(DType::BF16).from_float(probes.data(), fast.data(), n);
  for (size_t i = 0; i < probes.size(); ++i) {
    const float f = probes[i];
    const uint16_t want = nearest_bf16(f);
    const uint16_t core = fp32_to_bf16(f);
    if (want == 0xffff) {  // NaN: upper bits kept, quiet bit set
      ASSERT_EQ(core, static_cast<uint16_t>((fp32_to_bits(f) >> 16) | 0x40)) << i;
    } else {
      ASSERT_EQ(core, want) << std::hex << fp32_to_bits(f);
    }
    ASSERT_EQ(ref[i], core) << i;
    ASSERT_EQ(fast[i], core) << i;
  }
  std::vector<float> back(probes.size());
  type_traits(DType::BF16).to_float(fast.data(), back.data(), n);
  for (size_t i = 0; i < probes.size(); ++i) {
    ASSERT_EQ(fp32_to_bits(back[i]), static_cast<uint32_t>(fast[i]) << 16);
  }
}

// The AVX2 loops handle 8 elements at a time; odd lengths exercise the scalar tails.
TEST(Fp16, TailsMatchScalar) {
  Rng rng(3);
  for (int64_t n : {1, 7, 9, 15, 17, 33}) {
    std::vector<float> x = test::normal_floats(rng, n);
    for (DType t : {DType::F16, DType::BF16}) {
      std::vector<uint16_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
      reference_type_traits(t).from_float(x.data(), a.data(), n);
      type_traits(t).from_float(x.data(), b.data(), n);
      EXPECT_EQ(a, b) << dtype_name(t) << " n=" << n;
      std::vector<float> fa(static_cast<size_t>(n)), fb(static_cast<size_t>(n));
      reference_type_traits(t).to_float(a.data(), fa.data(), n);
      type_traits(t).to_float(a.data(), fb.data(), n);
      EXPECT_EQ(fa, fb) << dtype_name(t) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace strata::kernels
