// Dot products: the scalar reference against an independent double-precision sum over the
// dequantized operands, and the optimized (AVX2) kernels against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

struct DotCase {
  double exact = 0;  // sum of dequantized w * dequantized a, in double
  double mag = 0;    // sum of magnitude(w) * |a| (see test::weight_magnitudes)
  float ref = 0, fast = 0;
};

DotCase run_dot(DType t, int64_t n, Rng& rng) {
  const TypeTraits& fast = type_traits(t);
  const TypeTraits& ref = reference_type_traits(t);
  const std::vector<uint8_t> w = test::random_weights(t, 1, n, rng);
  const std::vector<float> x = test::normal_floats(rng, n);
  // Activations converted once; the two tables' activation quantizers agree byte for byte.
  const DType at = fast.vec_dot_type;
  std::vector<uint8_t> act(static_cast<size_t>(test::bytes_for(at, n)));
  reference_type_traits(at).from_float(x.data(), act.data(), n);
  std::vector<float> wf(static_cast<size_t>(n)), af(static_cast<size_t>(n));
  ref.to_float(w.data(), wf.data(), n);
  reference_type_traits(at).to_float(act.data(), af.data(), n);
  const std::vector<double> mags = test::weight_magnitudes(t, w.data(), wf.data(), n);
  DotCase c;
  for (int64_t i = 0; i < n; ++i) {
    c.exact += static_cast<double>(wf[i]) * af[i];
    c.mag += mags[i] * std::fabs(af[i]);
  }
  c.ref = ref.vec_dot(n, w.data(), act.data());
  c.fast = fast.vec_dot(n, w.data(), act.data());
  return c;
}

// The reference reduces in double (or exact integers), so against the double sum it differs
// only by the float scale products, the rounding of dequantized values (each at most
// u * magnitude) and the final rounding to float: 4 u * mag + u * |exact|.
TEST(VecDot, ReferenceMatchesDoubleSum) {
  Rng rng(21);
  for (DType t : test::weight_types()) {
    for (int64_t n : {256, 4096, 5632}) {
      const DotCase c = run_dot(t, n, rng);
      EXPECT_NEAR(c.ref, c.exact, 4 * test::kU * c.mag + test::kU * std::fabs(c.exact))
          << dtype_name(t) << " n=" << n;
    }
  }
}

TEST(VecDot, OptimizedMatchesReference) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2/FMA: both tables are the reference";
  Rng rng(22);
  for (DType t : test::weight_types()) {
    std::vector<int64_t> sizes = {256, 512, 4096, 5632, 11008};
    if (test::block_size(t) == 1) sizes.insert(sizes.end(), {1, 7, 8, 31, 33, 4096 + 13});
    if (test::block_size(t) == 32) sizes.insert(sizes.end(), {32, 96});  // odd block counts
    for (int64_t n : sizes) {
      for (int rep = 0; rep < 4; ++rep) {
        const DotCase c = run_dot(t, n, rng);
        ASSERT_NEAR(c.fast, c.ref, test::dot_tolerance(n, c.mag))
            << dtype_name(t) << " n=" << n << " exact=" << c.exact << " mag=" << c.mag;
      }
    }
  }
}

// The worst-case bound grows like n^2 relative to one product (about mag / n with random
// data), so it only catches a kernel that drops or misplaces a single element up to a few
// thousand elements; the tests above use such sizes next to the large ones.
TEST(VecDot, ToleranceIsTighterThanOneElement) {
  for (int64_t n : {256, 4096, 5632}) {
    EXPECT_LT(test::dot_tolerance(n, 1.0), 0.25 / static_cast<double>(n)) << n;
  }
}

}  // namespace
}  // namespace strata::kernels
