// The element-wise ops: the AVX2 SwiGLU and RMSNorm against their scalar references,
// over lengths with and without a SIMD tail, and SwiGLU across its whole input range
// (large negative gates, where exp underflows, included).
#include "kernels/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <utility>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/cpu/ops_avx2.h"
#include "kernels/cpu/ops_avx512.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

TEST(Ops, ReferenceSwigluIsSiluTimesUp) {
  std::vector<float> g = {0.0f, 1.0f, -1.0f, 20.0f, -20.0f}, u = {2.0f, 3.0f, 0.5f, 1.0f, 1.0f};
  ref::swiglu(g.data(), u.data(), 5);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_NEAR(g[1], 3.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(g[2], -0.5 / (1.0 + std::exp(1.0)), 1e-6);
  EXPECT_NEAR(g[3], 20.0, 1e-5);
  EXPECT_NEAR(g[4], -20.0 / (1.0 + std::exp(20.0)), 1e-12);
}

TEST(Ops, Avx2SwigluMatchesReference) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  Rng rng(5);
  for (const int64_t n : {1, 7, 8, 13, 5632}) {
    for (const float spread : {1.0f, 8.0f, 120.0f}) {
      std::vector<float> g(static_cast<size_t>(n)), u(g.size());
      for (auto& x : g) x = rng.uniform(-spread, spread);
      for (auto& x : u) x = rng.uniform(-2.0f, 2.0f);
      std::vector<float> want = g, got = g;
      ref::swiglu(want.data(), u.data(), n);
      avx2::swiglu(got.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        ASSERT_NEAR(got[k], want[k], 4e-7f * std::fabs(want[k]) + 1e-30f)
            << "g " << g[k] << " u " << u[k];
      }
    }
  }
}

// The AVX-512 SwiGLU is the AVX2 one on 16 lanes: the same bits in every element, at
// every length (full vectors and masked tails), including g beyond the exp clamp, zeros
// of both signs and infinities.
TEST(Ops, Avx512SwigluMatchesAvx2BitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni)
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  Rng rng(6);
  for (const int64_t n : {1, 7, 15, 16, 17, 31, 5632}) {
    for (const float spread : {1.0f, 8.0f, 120.0f}) {
      std::vector<float> g(static_cast<size_t>(n)), u(g.size());
      for (auto& x : g) x = rng.uniform(-spread, spread);
      for (auto& x : u) x = rng.uniform(-2.0f, 2.0f);
      const float specials[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, INFINITY, -INFINITY};
      for (size_t k = 0; k < std::size(specials) && k < g.size(); ++k)
        g[k * 3 % g.size()] = specials[k];
      std::vector<float> want = g, got = g;
      avx2::swiglu(want.data(), u.data(), n);
      avx512::swiglu(got.data(), u.data(), n);
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(std::memcmp(&got[k], &want[k], sizeof(float)), 0)
            << "g " << g[k] << " u " << u[k] << " n " << n;
      }
    }
  }
}

TEST(Ops, Avx2RmsnormMatchesReferenceAndMayAlias) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  Rng rng(6);
  for (const int64_t n : {1, 15, 16, 17, 2048, 8200}) {
    const auto x = test::normal_floats(rng, n, 3.0f), w = test::normal_floats(rng, n);
    std::vector<float> want(static_cast<size_t>(n)), got(want.size());
    ref::rmsnorm(x.data(), w.data(), want.data(), n, 1e-5f);
    avx2::rmsnorm(x.data(), w.data(), got.data(), n, 1e-5f);
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-6f * std::fabs(want[i]) + 1e-30f);
    std::vector<float> in_place = x;
    avx2::rmsnorm(in_place.data(), w.data(), in_place.data(), n, 1e-5f);
    EXPECT_EQ(in_place, got);
  }
}

// One float operation per element: the same bits as the reference, with and without a
// SIMD tail, and scale in place.
TEST(Ops, Avx2AddAndScaleMatchReferenceBitForBit) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  Rng rng(9);
  for (const int64_t n : {1, 7, 8, 9, 64, 2053}) {
    const auto x = test::normal_floats(rng, n, 3.0f), y = test::normal_floats(rng, n, 5.0f);
    std::vector<float> want = x, got = x;
    ref::add(want.data(), y.data(), n);
    avx2::add(got.data(), y.data(), n);
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << n;
    EXPECT_EQ(want[0], x[0] + y[0]);
    std::vector<float> scaled(want.size()), in_place = x;
    ref::scale(want.data(), x.data(), 0.37f, n);
    avx2::scale(scaled.data(), x.data(), 0.37f, n);
    avx2::scale(in_place.data(), in_place.data(), 0.37f, n);
    ASSERT_EQ(0, std::memcmp(want.data(), scaled.data(), want.size() * sizeof(float))) << n;
    ASSERT_EQ(0, std::memcmp(want.data(), in_place.data(), want.size() * sizeof(float))) << n;
    EXPECT_EQ(want[n - 1], x[static_cast<size_t>(n - 1)] * 0.37f);
  }
}

// The first maximum by `>`, whatever the length, the SIMD tail, NaNs (never chosen; 0 when
// x[0] is NaN), infinities, ties and signed zeros.
TEST(Ops, Avx2ArgmaxMatchesReference) {
  std::vector<float> probe = {1.0f, 3.0f, 3.0f, -2.0f};
  EXPECT_EQ(ref::argmax(probe.data(), 4), 1);
  probe[0] = std::nanf("");
  EXPECT_EQ(ref::argmax(probe.data(), 4), 0);
  EXPECT_EQ(ref::argmax(probe.data(), 0), 0);
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  const float nan = std::nanf(""), inf = INFINITY;
  Rng rng(11);
  for (const int64_t n : {1, 2, 7, 8, 9, 31, 32, 33, 40, 100, 32000, 32001}) {
    for (int trial = 0; trial < 40; ++trial) {
      auto x = test::normal_floats(rng, n, 4.0f);
      const int kind = trial % 8;
      for (auto& v : x) {
        const float u = rng.uniform(0.0f, 1.0f);
        if (kind == 1 && u < 0.1f) v = nan;
        if (kind == 2) v = std::round(v);  // many ties
        if (kind == 3) v = u < 0.5f ? 0.0f : -0.0f;
        if (kind == 4 && u < 0.05f) v = u < 0.025f ? inf : -inf;
        if (kind == 5) v = u < 0.9f ? nan : v;
        if (kind == 6) v = -inf;
      }
      if (kind == 7) x[0] = nan;
      if (kind == 1 && trial % 3 == 0) x[static_cast<size_t>(n - 1)] = 1e30f;
      ASSERT_EQ(ref::argmax(x.data(), n), avx2::argmax(x.data(), n)) << n << " kind " << kind;
    }
  }
}

// Both layouts, whole and partial rotations, with and without a SIMD tail: the same bits.
TEST(Ops, Avx2RopeMatchesReferenceBitForBit) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  Rng rng(7);
  for (const bool neox : {false, true}) {
    for (const auto& [head_dim, rot_dim] :
         {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {64, 32}, {80, 80}, {10, 6}, {2, 2}}) {
      const int64_t n_heads = 3;
      const auto x = test::normal_floats(rng, n_heads * head_dim, 4.0f);
      const auto cos = test::normal_floats(rng, rot_dim / 2),
                 sin = test::normal_floats(rng, rot_dim / 2);
      std::vector<float> want = x, got = x;
      ref::rope(want.data(), n_heads, head_dim, rot_dim, cos.data(), sin.data(), neox);
      avx2::rope(got.data(), n_heads, head_dim, rot_dim, cos.data(), sin.data(), neox);
      ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
          << "neox " << neox << " head_dim " << head_dim << " rot_dim " << rot_dim;
      EXPECT_NE(want, x);
    }
  }
}

}  // namespace
}  // namespace strata::kernels
