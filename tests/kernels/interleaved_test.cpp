// The internal interleaved layouts (Q4_0_X16 weights, Q8_0_X16 activations): repacking is
// a lossless byte move, the activation layout is the same whichever level converts it, the
// scalar model agrees with Q4_0 in the file layout up to float rounding, and the AVX-512
// kernel agrees with the scalar model bit for bit for every tile shape.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "kernel_test_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/interleaved.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::Rng;

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

std::vector<uint8_t> repacked(const std::vector<uint8_t>& q4_0, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out = q4_0;
  repack_weight_rows(DType::Q4_0, DType::Q4_0_X16, out.data(), rows, cols);
  return out;
}

std::vector<uint8_t> activations(DType t, const std::vector<float>& x, int64_t n_tokens, int64_t cols,
                                 const TypeTraits& traits) {
  const int64_t bytes = row_bytes(t, cols);
  std::vector<uint8_t> a(static_cast<size_t>(bytes * n_tokens));
  for (int64_t i = 0; i < n_tokens; ++i) traits.from_float(x.data() + i * cols, a.data() + i * bytes, cols);
  return a;
}

TEST(Interleaved, LayoutsHaveTheSizeOfWhatTheyReplace) {
  EXPECT_EQ(row_bytes(DType::Q4_0_X16, 2048), row_bytes(DType::Q4_0, 2048));
  EXPECT_EQ(dtype_info(DType::Q4_0_X16).block_size, kQKX16);
  EXPECT_EQ(dtype_info(DType::Q8_0_X16).type_size, sizeof(BlockQ8_0x16));
  // Internal ids are not file types: a GGUF naming them is rejected by the reader.
  EXPECT_FALSE(dtype_info(static_cast<uint32_t>(DType::Q4_0_X16)).has_value());
  EXPECT_FALSE(dtype_from_name("q4_0_x16").has_value());
}

TEST(Interleaved, RepackIsLossless) {
  Rng rng(1);
  const int64_t rows = 3, cols = 1536;
  const auto w = test::random_weights(DType::Q4_0, rows, cols, rng);
  const auto x16 = repacked(w, rows, cols);
  EXPECT_NE(w, x16);
  std::vector<float> a(static_cast<size_t>(rows * cols)), b(a.size());
  reference_type_traits(DType::Q4_0).to_float(w.data(), a.data(), rows * cols);
  reference_type_traits(DType::Q4_0_X16).to_float(x16.data(), b.data(), rows * cols);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));

  // from_float of the repacked type = the Q4_0 quantizer, then repacking.
  const auto f = test::normal_floats(rng, cols);
  std::vector<uint8_t> q(static_cast<size_t>(row_bytes(DType::Q4_0, cols))), qx(q.size());
  reference_type_traits(DType::Q4_0).from_float(f.data(), q.data(), cols);
  reference_type_traits(DType::Q4_0_X16).from_float(f.data(), qx.data(), cols);
  EXPECT_EQ(repacked(q, 1, cols), qx);
}

TEST(Interleaved, RepackRejectsOtherShapesAndTypes) {
  std::vector<uint8_t> buf(4096);
  EXPECT_THROW(repack_weight_rows(DType::Q4_0, DType::Q4_0_X16, buf.data(), 1, 480), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q8_0, DType::Q4_0_X16, buf.data(), 1, 512), Error);
  EXPECT_THROW(repack_weight_rows(DType::Q4_0, DType::Q8_0, buf.data(), 1, 512), Error);
  EXPECT_EQ(repacked_weight_type(DType::Q8_0, 2048), DType::Q8_0);
  EXPECT_EQ(repacked_weight_type(DType::Q4_0, 480), DType::Q4_0);
  EXPECT_EQ(repacked_weight_type(DType::Q4_0, 2048),
            cpu_kernel_isa() >= KernelIsa::avx512_vnni ? DType::Q4_0_X16 : DType::Q4_0);
}

TEST(Interleaved, ActivationLayoutIsTheSameAtEveryLevelAndHoldsQ8_0) {
  Rng rng(2);
  const int64_t cols = 1024;
  const auto x = test::normal_floats(rng, cols, 2.0f);
  const auto ref = activations(DType::Q8_0_X16, x, 1, cols, reference_type_traits(DType::Q8_0_X16));
  const auto fast = activations(DType::Q8_0_X16, x, 1, cols, type_traits(DType::Q8_0_X16));
  EXPECT_EQ(ref, fast);
  // Dequantized, it is exactly the Q8_0 activation row.
  const auto q8 = activations(DType::Q8_0, x, 1, cols, reference_type_traits(DType::Q8_0));
  std::vector<float> a(static_cast<size_t>(cols)), b(a.size());
  reference_type_traits(DType::Q8_0).to_float(q8.data(), a.data(), cols);
  reference_type_traits(DType::Q8_0_X16).to_float(ref.data(), b.data(), cols);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
}

TEST(Interleaved, ScalarModelMatchesFileLayoutUpToRounding) {
  Rng rng(3);
  const int64_t rows = 16, cols = 2048;
  const auto w = test::random_weights(DType::Q4_0, rows, cols, rng);
  const auto x16 = repacked(w, rows, cols);
  const auto x = test::normal_floats(rng, cols, 2.0f);
  const auto a8 = activations(DType::Q8_0, x, 1, cols, reference_type_traits(DType::Q8_0));
  const auto a16 = activations(DType::Q8_0_X16, x, 1, cols, reference_type_traits(DType::Q8_0_X16));
  const int64_t wb = row_bytes(DType::Q4_0, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float want = reference_type_traits(DType::Q4_0).vec_dot(cols, w.data() + r * wb, a8.data());
    const float got = reference_type_traits(DType::Q4_0_X16).vec_dot(cols, x16.data() + r * wb, a16.data());
    EXPECT_NEAR(got, want, 1e-5f * (1.0f + std::fabs(want))) << "row " << r;
  }
}

TEST(Interleaved, Avx512KernelMatchesScalarModelBitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  }
  const TypeTraits& ref = reference_type_traits(DType::Q4_0_X16);
  const TypeTraits& fast = type_traits_for(KernelIsa::avx512_vnni, DType::Q4_0_X16);
  Rng rng(4);
  for (const int64_t cols : {512, 1536, 2048}) {
    for (const int64_t rows : {1, 2, 5}) {
      for (const int64_t n_tokens : {1, 2, 3, 4, 5, 9}) {
        auto w = repacked(test::random_weights(DType::Q4_0, rows, cols, rng), rows, cols);
        const int64_t wb = row_bytes(DType::Q4_0_X16, cols);
        if (rows == 5) {  // the largest half and an infinity among the scales
          auto* g = reinterpret_cast<BlockQ4_0x16*>(w.data() + 3 * wb);
          g->d[0] = 0x7bff;
          g->d[15] = 0x7c00;
        }
        const auto x = test::normal_floats(rng, n_tokens * cols, 3.0f);
        const auto a = activations(DType::Q8_0_X16, x, n_tokens, cols, ref);
        const int64_t ab = row_bytes(DType::Q8_0_X16, cols);
        std::vector<float> y(static_cast<size_t>(rows * n_tokens));
        fast.gemm(cols, w.data(), wb, rows, a.data(), ab, n_tokens, y.data(), rows);
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            const float want = ref.vec_dot(cols, w.data() + r * wb, a.data() + t * ab);
            EXPECT_TRUE(same_float(y[static_cast<size_t>(t * rows + r)], want))
                << "cols " << cols << " rows " << rows << " tokens " << n_tokens << " at (" << r << ", " << t
                << "): " << y[static_cast<size_t>(t * rows + r)] << " vs " << want;
            EXPECT_TRUE(same_float(fast.vec_dot(cols, w.data() + r * wb, a.data() + t * ab), want));
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::kernels
