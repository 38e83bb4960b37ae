// The attention tile folds: the scalar reference against a plain softmax in double, and
// the AVX2 / AVX-512 folds against the reference, over several tiles (so the running
// max, sum and accumulator are rescaled), partial tiles, head dimensions with and without
// SIMD tails, block sizes below, at and above a vector, and 1-128 query rows.
#include "attention/tile_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/quant/traits.h"

namespace strata::attention {
namespace {

struct Case {
  int64_t hd, bs, n_q, n_keys;
};

std::vector<float> normals(std::mt19937& rng, int64_t n, float sigma) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  return v;
}

// Attention of n_q rows over n_keys keys, folded tile by tile with `fold`; keys are laid
// out in blocks of bs as the cache holds them (keys transposed per block). The first
// block is folded as two segments, [0, 1) and [1, ...), as streaming heads do.
std::vector<float> run(void (*fold)(const FoldTile&), const Case& c, const std::vector<float>& q,
                       const std::vector<float>& keys, const std::vector<float>& vals, bool f16 = false) {
  const int64_t n_blocks = (c.n_keys + c.bs - 1) / c.bs;
  std::vector<float> kt(static_cast<size_t>(n_blocks * c.bs * c.hd), 7.0f);  // 7: unwritten slots
  std::vector<float> vt(kt.size(), 7.0f);
  for (int64_t j = 0; j < c.n_keys; ++j) {
    const int64_t b = j / c.bs, s = j % c.bs;
    for (int64_t d = 0; d < c.hd; ++d) {
      kt[static_cast<size_t>(b * c.bs * c.hd + d * c.bs + s)] = keys[static_cast<size_t>(j * c.hd + d)];
      vt[static_cast<size_t>(b * c.bs * c.hd + s * c.hd + d)] = vals[static_cast<size_t>(j * c.hd + d)];
    }
  }
  std::vector<uint16_t> kt16(kt.size()), vt16(vt.size());  // the same tiles as halves
  for (size_t i = 0; i < kt.size(); ++i) kt16[i] = fp32_to_fp16(kt[i]), vt16[i] = fp32_to_fp16(vt[i]);
  std::vector<float> mx(static_cast<size_t>(c.n_q), -INFINITY), sum(static_cast<size_t>(c.n_q), 0.0f);
  std::vector<float> acc(static_cast<size_t>(c.n_q * c.hd), 0.0f);
  std::vector<float> p(static_cast<size_t>(c.n_q * padded_block(c.bs)));
  auto fold_range = [&](int64_t b, int64_t j0, int64_t j1) {
    FoldTile t;
    t.q = q.data();
    t.n_q = c.n_q;
    t.kt = f16 ? static_cast<const void*>(kt16.data() + b * c.bs * c.hd) : kt.data() + b * c.bs * c.hd;
    t.v = f16 ? static_cast<const void*>(vt16.data() + b * c.bs * c.hd) : vt.data() + b * c.bs * c.hd;
    t.f16 = f16;
    t.block_size = c.bs;
    t.head_dim = c.hd;
    t.j0 = j0;
    t.j1 = j1;
    t.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    t.max = mx.data();
    t.sum = sum.data();
    t.acc = acc.data();
    t.p = p.data();
    fold(t);
  };
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t end = std::min(c.bs, c.n_keys - b * c.bs);
    if (b == 0 && end > 1) {
      fold_range(0, 0, 1);
      fold_range(0, 1, end);
    } else {
      fold_range(b, 0, end);
    }
  }
  for (int64_t r = 0; r < c.n_q; ++r) {
    for (int64_t d = 0; d < c.hd; ++d) acc[static_cast<size_t>(r * c.hd + d)] /= sum[static_cast<size_t>(r)];
  }
  return acc;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {4, 16, 1, 1},   {4, 16, 2, 37},  {8, 16, 8, 16},  {36, 16, 3, 50},   {64, 16, 8, 200},
      {64, 16, 4, 33}, {64, 8, 5, 40},  {64, 32, 9, 70}, {72, 16, 6, 100},  {128, 16, 8, 64},
      {128, 24, 2, 49}, {17, 5, 7, 23},
      // Prefill-sized row counts: the AVX-512 fold's 16-row softmax and f16 tile widening,
      // with remainders and more rows than one correction group (64).
      {64, 16, 16, 100}, {64, 16, 33, 70}, {64, 16, 64, 200}, {17, 5, 20, 23}, {64, 32, 70, 90},
      {64, 16, 128, 40},  // a 16-token prefill group at llama-1b's GQA ratio
  };
  return cs;
}

TEST(TileKernels, ReferenceMatchesDoubleSoftmax) {
  std::mt19937 rng(3);
  for (const Case& c : cases()) {
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f),
               v = normals(rng, c.n_keys * c.hd, 1.0f);
    const std::vector<float> out = run(reference_tile_kernels().fold, c, q, k, v);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
    for (int64_t r = 0; r < c.n_q; ++r) {
      std::vector<double> s(static_cast<size_t>(c.n_keys));
      double m = -INFINITY, total = 0;
      for (int64_t j = 0; j < c.n_keys; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < c.hd; ++d) dot += static_cast<double>(q[r * c.hd + d]) * k[j * c.hd + d];
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      for (auto& x : s) total += (x = std::exp(x - m));
      for (int64_t d = 0; d < c.hd; ++d) {
        double o = 0;
        for (int64_t j = 0; j < c.n_keys; ++j) o += s[j] * v[j * c.hd + d];
        ASSERT_NEAR(out[r * c.hd + d], o / total, 2e-5) << "hd " << c.hd << " bs " << c.bs << " row " << r;
      }
    }
  }
}

void expect_matches_reference(void (*fold)(const FoldTile&), const char* name) {
  std::mt19937 rng(7);
  for (const Case& c : cases()) {
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f),
               v = normals(rng, c.n_keys * c.hd, 1.0f);
    for (bool f16 : {false, true}) {
      const std::vector<float> ref = run(reference_tile_kernels().fold, c, q, k, v, f16);
      const std::vector<float> fast = run(fold, c, q, k, v, f16);
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_NEAR(fast[i], ref[i], 1e-5f) << name << " hd " << c.hd << " bs " << c.bs << " n_q " << c.n_q
                                            << " keys " << c.n_keys << " f16 " << f16 << " element " << i;
      }
    }
    // A row's result does not depend on the other rows of the call, bit for bit: the
    // many-row paths (16 rows per softmax pass, f16 tiles widened once) give each row
    // what the one-row path gives it.
    for (bool f16 : {false, true}) {
      if (c.n_q == 1) break;
      const std::vector<float> fast = run(fold, c, q, k, v, f16);
      Case one = c;
      one.n_q = 1;
      const int64_t step = c.n_q > 9 ? 7 : c.n_q - 1;  // some rows of big cases, the last of small
      for (int64_t r = c.n_q - 1; r >= 0; r -= step) {
        const std::vector<float> q_row(q.begin() + r * c.hd, q.begin() + (r + 1) * c.hd);
        const std::vector<float> alone = run(fold, one, q_row, k, v, f16);
        for (int64_t d = 0; d < c.hd; ++d) {
          ASSERT_EQ(alone[d], fast[r * c.hd + d]) << name << " hd " << c.hd << " n_q " << c.n_q << " f16 " << f16
                                                  << " row " << r << " alone";
        }
      }
    }
  }
}

TEST(TileKernels, Avx2MatchesReference) {
  if (!kernels::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  expect_matches_reference(avx2::fold, "avx2");
}

TEST(TileKernels, Avx512MatchesReference) {
  if (kernels::cpu_kernel_isa() < kernels::KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 on this CPU (or STRATA_NO_AVX512)";
  }
  expect_matches_reference(avx512::fold, "avx512");
}

}  // namespace
}  // namespace strata::attention
