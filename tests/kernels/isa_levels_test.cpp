// The kernel tables of different instruction-set levels against each other: the AVX-512
// VNNI Q8_0/Q4_0, Q4_K/Q6_K and F32/F16/BF16 kernels must give the AVX2 kernels' results bit for
// bit (their reduction order is the same by construction, see legacy_avx512.cpp), so the level a
// machine picks never changes a model's output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernel_test_util.h"
#include "kernels/quant/traits.h"
#include "tools/isa_env.h"

namespace strata::kernels {
namespace {

using test::Rng;

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

void expect_levels_agree(DType t, int64_t rows, int64_t cols, int64_t n_tokens, Rng& rng,
                         bool extreme_scales) {
  const TypeTraits& lo = type_traits_for(KernelIsa::avx2, t);
  const TypeTraits& hi = type_traits_for(KernelIsa::avx512_vnni, t);
  std::vector<uint8_t> w = test::random_weights(t, rows, cols, rng);
  const int64_t w_bytes = test::bytes_for(t, cols);
  if (extreme_scales) {  // the largest half, and infinities in the (possibly odd) last block
    const size_t bs = dtype_info(t).type_size;
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* row = w.data() + r * w_bytes;
      const uint16_t big = 0x7bff, inf = 0x7c00;
      std::memcpy(row, &big, 2);
      if (r % 3 == 0) std::memcpy(row + w_bytes - static_cast<int64_t>(bs), &inf, 2);
    }
  }
  const std::vector<float> x = test::normal_floats(rng, n_tokens * cols, 3.0f);
  const DType at = lo.vec_dot_type;
  const int64_t a_bytes = test::bytes_for(at, cols);
  std::vector<uint8_t> act(static_cast<size_t>(a_bytes * n_tokens));
  for (int64_t tok = 0; tok < n_tokens; ++tok) {
    reference_type_traits(at).from_float(x.data() + tok * cols, act.data() + tok * a_bytes, cols);
  }
  std::vector<float> y_lo(static_cast<size_t>(rows * n_tokens)), y_hi(y_lo.size());
  lo.gemm(cols, w.data(), w_bytes, rows, act.data(), a_bytes, n_tokens, y_lo.data(), rows);
  hi.gemm(cols, w.data(), w_bytes, rows, act.data(), a_bytes, n_tokens, y_hi.data(), rows);
  for (int64_t tok = 0; tok < n_tokens; ++tok) {
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = static_cast<size_t>(tok * rows + r);
      ASSERT_TRUE(same_float(y_lo[i], y_hi[i]))
          << dtype_name(t) << " " << rows << "x" << cols << " tokens " << n_tokens << " row " << r
          << " token " << tok << ": avx2 " << y_lo[i] << " avx512 " << y_hi[i];
      const float dot = hi.vec_dot(cols, w.data() + r * w_bytes, act.data() + tok * a_bytes);
      ASSERT_TRUE(same_float(dot, y_hi[i])) << dtype_name(t) << " vec_dot row " << r;
    }
  }
}

TEST(KernelIsa, Avx512VnniMatchesAvx2BitForBit) {
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 VNNI on this CPU (or STRATA_NO_AVX512)";
  }
  Rng rng(71);
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL}) {
    // Block counts 1, 3, 16 and 65 (odd last blocks), row counts around the 4-row tile,
    // token counts hitting every tile width and remainder.
    for (int64_t cols : {32, 96, 512, 2080}) {
      for (int64_t rows : {1, 3, 4, 9}) {
        for (int64_t tokens : {1, 2, 3, 4, 5, 7, 8, 13}) {
          expect_levels_agree(t, rows, cols, tokens, rng, false);
        }
      }
      expect_levels_agree(t, 11, cols, 6, rng, true);
    }
  }
  // The K-quants and IQ4_XS: 1, 2 and 9 super-blocks.
  for (DType t : {DType::Q4_K, DType::Q6_K, DType::Q2_K, DType::Q3_K, DType::Q5_K, DType::IQ4_XS}) {
    for (int64_t cols : {256, 512, 2304}) {
      for (int64_t rows : {1, 3, 4}) {
        for (int64_t tokens : {1, 2, 3, 4, 5, 9})
          expect_levels_agree(t, rows, cols, tokens, rng, false);
      }
      expect_levels_agree(t, 5, cols, 6, rng, true);
    }
  }
  // The float types, with rows that end in 8-element steps and single elements too.
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (int64_t cols : {5, 32, 45, 100, 2053}) {
      for (int64_t rows : {1, 3, 4}) {
        for (int64_t tokens : {1, 2, 3, 4, 5, 9})
          expect_levels_agree(t, rows, cols, tokens, rng, false);
      }
      expect_levels_agree(t, 5, cols, 6, rng, true);
    }
  }
}

TEST(KernelIsa, LevelsAreOrderedAndNamed) {
  EXPECT_STREQ(kernel_isa_name(KernelIsa::scalar), "scalar");
  EXPECT_EQ(cpu_has_avx2_fma(), cpu_kernel_isa() >= KernelIsa::avx2);
  // The scalar level is the reference table; levels above the CPU's are refused.
  EXPECT_EQ(type_traits_for(KernelIsa::scalar, DType::Q4_0).vec_dot,
            reference_type_traits(DType::Q4_0).vec_dot);
  EXPECT_EQ(type_traits_for(cpu_kernel_isa(), DType::Q4_0).vec_dot,
            type_traits(DType::Q4_0).vec_dot);
  if (cpu_kernel_isa() < KernelIsa::avx512_vnni) {
    EXPECT_THROW(type_traits_for(KernelIsa::avx512_vnni, DType::Q4_0), Error);
  }
}

// The overrides cap the CPU's levels; this process runs at the levels its main set from
// the environment (tests/support/test_main.cpp), which cannot change afterwards.
TEST(KernelIsa, OverridesCapTheLevel) {
  const CpuKernelLevels cpu = detect_cpu_kernels({});
  IsaOverrides no_avx2, no_avx512, no_bf16, no_vnni, no_amx;
  no_amx.no_amx = true;
  no_avx2.no_avx2 = true;
  no_avx512.no_avx512 = true;
  no_bf16.no_avx512_bf16 = true;
  no_vnni.no_avx_vnni = true;
  EXPECT_EQ(detect_cpu_kernels(no_vnni).isa, cpu.isa);
  EXPECT_FALSE(detect_cpu_kernels(no_vnni).avx_vnni);
  EXPECT_FALSE(detect_cpu_kernels(no_avx2).avx_vnni);
  EXPECT_EQ(detect_cpu_kernels(no_avx512).avx_vnni, cpu.avx_vnni);
  EXPECT_TRUE(!cpu.avx_vnni || cpu.isa >= KernelIsa::avx2);
  EXPECT_EQ(detect_cpu_kernels(no_avx2).isa, KernelIsa::scalar);
  EXPECT_FALSE(detect_cpu_kernels(no_avx2).avx512_bf16);
  EXPECT_EQ(detect_cpu_kernels(no_avx512).isa, std::min(cpu.isa, KernelIsa::avx2));
  EXPECT_FALSE(detect_cpu_kernels(no_avx512).avx512_bf16);
  EXPECT_EQ(detect_cpu_kernels(no_bf16).isa, cpu.isa);
  EXPECT_FALSE(detect_cpu_kernels(no_bf16).avx512_bf16);
  EXPECT_TRUE(!cpu.avx512_bf16 || cpu.isa == KernelIsa::avx512_vnni);
  EXPECT_EQ(detect_cpu_kernels(no_amx).isa, cpu.isa);
  EXPECT_FALSE(detect_cpu_kernels(no_amx).amx_int8);
  EXPECT_FALSE(detect_cpu_kernels(no_avx512).amx_int8);
  EXPECT_TRUE(!cpu.amx_int8 || cpu.isa == KernelIsa::avx512_vnni);

  const IsaOverrides env = tools::isa_overrides_from_env();
  const CpuKernelLevels expected = detect_cpu_kernels(env);
  EXPECT_EQ(cpu_kernel_isa(), expected.isa);
  EXPECT_EQ(cpu_has_avx512_bf16(), expected.avx512_bf16);
  EXPECT_EQ(cpu_has_avx_vnni(), expected.avx_vnni);
  EXPECT_EQ(cpu_has_amx_int8(), expected.amx_int8);
  if (!expected.avx_vnni) {
    EXPECT_THROW(type_traits_avx_vnni(DType::Q4_0_X16), Error);
  }
  if (!expected.amx_int8) {
    EXPECT_THROW(type_traits_amx(DType::Q4_0_X16, AmxTiles::hardware), Error);
  }
  if (expected.isa < KernelIsa::avx512_vnni) {
    EXPECT_THROW(type_traits_amx(DType::Q4_0_X16, AmxTiles::emulated), Error);
  }
  EXPECT_EQ(cpu_kernels_name(),
            std::string(kernel_isa_name(expected.isa)) +
                (expected.isa == KernelIsa::avx2 && expected.avx_vnni ? "+avx-vnni" : "") +
                (expected.amx_int8 ? "+amx" : ""));
  EXPECT_NO_THROW(init_cpu_kernels(env));
  IsaOverrides other = env;
  other.no_avx2 = !other.no_avx2;
  EXPECT_THROW(init_cpu_kernels(other), Error);
  EXPECT_EQ(cpu_kernel_isa(), expected.isa);
}

}  // namespace
}  // namespace strata::kernels
