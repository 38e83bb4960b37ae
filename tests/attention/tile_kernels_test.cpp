// The AVX2 attention tile kernels against the scalar reference: odd key counts, head
// dimensions with and without a SIMD tail, and a running accumulator being rescaled.
#include "attention/tile_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/quant/traits.h"

namespace strata::attention {
namespace {

std::vector<float> normals(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  return v;
}

TEST(TileKernels, Avx2MatchesReference) {
  if (!kernels::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  const TileKernels& ref = reference_tile_kernels();
  std::mt19937 rng(7);
  for (int64_t hd : {4, 8, 36, 64, 72, 128}) {
    for (int64_t n : {1, 3, 4, 7, 16}) {
      const std::vector<float> q = normals(rng, hd), k = normals(rng, n * hd),
                               v = normals(rng, n * hd), acc0 = normals(rng, hd);
      std::vector<float> sc_ref(static_cast<size_t>(n)), sc_fast(static_cast<size_t>(n));
      const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
      const float max_ref = ref.scores(q.data(), k.data(), n, hd, scale, sc_ref.data());
      const float max_fast = avx2::scores(q.data(), k.data(), n, hd, scale, sc_fast.data());
      float expect_max = sc_fast[0];
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_NEAR(sc_fast[j], sc_ref[j], 1e-5f * static_cast<float>(hd)) << hd << " " << n;
        expect_max = std::max(expect_max, sc_fast[j]);
      }
      EXPECT_EQ(max_fast, expect_max);
      EXPECT_NEAR(max_fast, max_ref, 1e-5f * static_cast<float>(hd));

      std::vector<float> p(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) p[j] = std::exp(sc_ref[j] - max_ref);
      std::vector<float> acc_ref = acc0, acc_fast = acc0;
      ref.accumulate(p.data(), v.data(), n, hd, 0.75f, acc_ref.data());
      avx2::accumulate(p.data(), v.data(), n, hd, 0.75f, acc_fast.data());
      for (int64_t d = 0; d < hd; ++d) {
        EXPECT_NEAR(acc_fast[d], acc_ref[d], 1e-5f * static_cast<float>(n + 1)) << hd << " " << n;
      }
    }
  }
}

}  // namespace
}  // namespace strata::attention
