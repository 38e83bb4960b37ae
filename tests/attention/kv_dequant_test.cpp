// q8_0 and q4_0 KV tiles: quantizing a slot and dequantizing the tile (to bf16) round-trips
// within half a scale step and a bf16 rounding (keys and values: the round trip checks the
// key tiles' dimension quads), the AVX2 / AVX-512 value dequantizers give the reference's
// bits (attention folds keys as stored; the SIMD sets hand key tiles to the reference), and the
// AVX2 / AVX-512 quantize-on-write stores give the reference's bytes.
#include "attention/kv_dequant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attention/kv_quantize.h"
#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"

namespace strata::attention {
namespace {

struct Tile {
  int64_t bs, hd;
  std::vector<float> src;  // [slot][d]
  std::vector<uint8_t> k, v;
};

Tile make_tile(int64_t bs, int64_t hd, uint32_t seed, DType type = DType::Q8_0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  Tile t{bs, hd, std::vector<float>(static_cast<size_t>(bs * hd)), {}, {}};
  for (auto& x : t.src) x = normal(rng);
  // An outlier group, an all-zero group (scale 0) and a constant one.
  t.src[3] = 1e4f;
  for (int64_t d = 0; d < 16 && bs > 1; ++d) t.src[static_cast<size_t>(hd + d)] = 0.0f;
  for (int64_t d = 0; d < 16 && bs > 2; ++d) t.src[static_cast<size_t>(2 * hd + d)] = -0.5f;
  // A tie for the largest magnitude (q4_0 keeps the first: -3 here).
  if (bs > 3 && hd >= 32) {
    for (int64_t d = 16; d < 32; ++d) {
      auto& x = t.src[static_cast<size_t>(3 * hd + d)];
      x = std::clamp(x, -2.9f, 2.9f);
    }
    t.src[static_cast<size_t>(3 * hd + 17)] = -3.0f;
    t.src[static_cast<size_t>(3 * hd + 20)] = 3.0f;
  }
  const size_t bytes = static_cast<size_t>(bs) * kv_quant::row_bytes(type, hd);
  t.k.assign(bytes, 0xAB);
  t.v.assign(bytes, 0xCD);
  for (int64_t s = 0; s < bs; ++s) {
    kv_quant::store(type, t.k.data(), true, t.src.data() + s * hd, s, bs, hd);
    kv_quant::store(type, t.v.data(), false, t.src.data() + s * hd, s, bs, hd);
  }
  return t;
}

void expect_same_as_reference(DequantTile f, const char* name, DType type = DType::Q8_0) {
  // Odd block sizes for q8_0 only (q4_0 needs an even one): the value tile's half pair.
  for (int64_t bs : {16, 8, 20, 32, 6, 7, 17}) {
    if (type == DType::Q4_0 && bs % 2 != 0) continue;
    for (int64_t hd : {16, 32, 48, 64, 128}) {
      const Tile t = make_tile(bs, hd, static_cast<uint32_t>(bs * 1000 + hd), type);
      const auto n = static_cast<size_t>(dequant_tile_elems(bs, hd));
      std::vector<uint16_t> want(n, 0x1234), got(n, 0x4321);
      reference_kv_dequant().of(type)(t.v.data(), false, bs, hd, want.data());
      f(t.v.data(), false, bs, hd, got.data());
      ASSERT_EQ(want, got) << name << " " << dtype_name(type) << " bs " << bs << " hd " << hd
                           << " values";
    }
  }
}

// Quantize-on-write: every slot of a tile stored with `f` gives the reference's bytes,
// over tiles with outliers, zero, constant, tied, NaN and infinite groups.
void expect_store_same_as_reference(StoreRow f, const char* name, DType type) {
  for (int64_t bs : {16, 8, 20, 32, 6}) {
    for (int64_t hd : {16, 32, 48, 64, 128}) {
      Tile t = make_tile(bs, hd, static_cast<uint32_t>(bs * 77 + hd), type);
      if (bs > 5) {
        t.src[static_cast<size_t>(4 * hd + 1)] = std::nanf("");
        t.src[static_cast<size_t>(5 * hd + 2)] = -INFINITY;
        t.src[static_cast<size_t>(5 * hd)] = 1e-40f;  // subnormal
        t.src[static_cast<size_t>(3 * hd + 3)] = -std::nanf("");
        t.src[static_cast<size_t>(2 * hd + 5)] = std::bit_cast<float>(0x7f800001u);  // signaling
        t.src[static_cast<size_t>(1 * hd + 7)] = std::bit_cast<float>(0xff800002u);
      }
      for (bool keys : {true, false}) {
        std::vector<uint8_t> want((keys ? t.k : t.v).size(), 0x5A), got(want);
        for (int64_t s = 0; s < bs; ++s) {
          kv_quant::store(type, want.data(), keys, t.src.data() + s * hd, s, bs, hd);
          f(got.data(), keys, t.src.data() + s * hd, s, bs, hd);
        }
        ASSERT_EQ(want, got) << name << " " << dtype_name(type) << " bs " << bs << " hd " << hd
                             << (keys ? " keys" : " values");
      }
    }
  }
}

TEST(KvDequant, ReferenceRoundTripsWithinHalfAStep) {
  for (int64_t bs : {16, 8}) {
    for (int64_t hd : {16, 32, 128}) {
      const Tile t = make_tile(bs, hd, 7);
      for (bool keys : {true, false}) {
        std::vector<uint16_t> out(t.src.size());
        reference_kv_dequant().q8_0((keys ? t.k : t.v).data(), keys, bs, hd, out.data());
        for (int64_t s = 0; s < bs; ++s) {
          const int64_t gs = kv_quant::group_size(hd);
          for (int64_t g = 0; g < hd / gs; ++g) {
            float amax = 0;
            for (int64_t i = 0; i < gs; ++i)
              amax = std::fmax(amax, std::fabs(t.src[size_t(s * hd + g * gs + i)]));
            const float step = fp16_to_fp32(fp32_to_fp16(amax / 127.0f));
            for (int64_t i = 0; i < gs; ++i) {
              const int64_t d = g * gs + i;
              const int64_t at = keys ? kv_layout::bf16_key_index(d, s, bs)
                                      : kv_layout::bf16_value_index(s, d, hd);
              // Half a step of rounding, plus the f16 rounding of the scale at the group max
              // and the bf16 rounding of the element (half a unit in its 8th bit).
              const float x = t.src[size_t(s * hd + d)];
              EXPECT_NEAR(bf16_to_fp32(out[size_t(at)]), x,
                          0.5f * step + amax * 1e-3f + std::fabs(x) * (1.0f / 256))
                  << "slot " << s << " d " << d << (keys ? " keys" : " values");
            }
          }
        }
      }
    }
  }
}

TEST(KvDequant, Q4ReferenceRoundTripsWithinHalfAStep) {
  for (int64_t bs : {16, 8}) {
    for (int64_t hd : {16, 32, 128}) {
      const Tile t = make_tile(bs, hd, 9, DType::Q4_0);
      for (bool keys : {true, false}) {
        std::vector<uint16_t> out(t.src.size());
        reference_kv_dequant().q4_0((keys ? t.k : t.v).data(), keys, bs, hd, out.data());
        for (int64_t s = 0; s < bs; ++s) {
          const int64_t gs = kv_quant::group_size(hd);
          for (int64_t g = 0; g < hd / gs; ++g) {
            float amax = 0, m = 0;
            for (int64_t i = 0; i < gs; ++i) {
              const float x = t.src[size_t(s * hd + g * gs + i)];
              if (std::fabs(x) > amax) amax = std::fabs(m = x);
            }
            const float step = std::fabs(fp16_to_fp32(fp32_to_fp16(m / -8.0f)));
            for (int64_t i = 0; i < gs; ++i) {
              const int64_t d = g * gs + i;
              const int64_t at = keys ? kv_layout::bf16_key_index(d, s, bs)
                                      : kv_layout::bf16_value_index(s, d, hd);
              const float x = t.src[size_t(s * hd + d)];
              // Half a step, or a whole one where +8 steps is clamped to +7 (the side
              // opposite the group's largest element), plus the scale's f16 rounding.
              const float tol =
                  (x * m < 0 && std::fabs(x) > 7.5f * step ? 1.0f : 0.5f) * step + amax * 1e-3f +
                  std::fabs(x) * (1.0f / 256);  // and the bf16 rounding of the element
              EXPECT_NEAR(bf16_to_fp32(out[size_t(at)]), x, tol)
                  << "slot " << s << " d " << d << (keys ? " keys" : " values");
            }
          }
        }
      }
    }
  }
}

TEST(KvDequant, NonFiniteInputsDoNotCrash) {
  std::vector<float> row(32, 1.0f);
  row[0] = std::nanf("");
  row[1] = INFINITY;
  std::vector<uint8_t> tile(static_cast<size_t>(16) * kv_quant::row_bytes(DType::Q8_0, 32));
  kv_quant::store_q8_0(tile.data(), true, row.data(), 0, 16, 32);
  std::vector<uint16_t> out(16 * 32), fast(16 * 32);
  reference_kv_dequant().q8_0(tile.data(), true, 16, 32, out.data());
  // An infinite scale times q = 0 is NaN: the SIMD rounding to bf16 keeps it NaN, as the
  // reference's, with the same bits.
  kv_dequant().q8_0(tile.data(), true, 16, 32, fast.data());
  EXPECT_EQ(out, fast) << kv_dequant().name;
  EXPECT_TRUE(
      std::isnan(bf16_to_fp32(out[static_cast<size_t>(kv_layout::bf16_key_index(2, 0, 16))])));
}

TEST(KvDequant, Avx2MatchesReference) {
  if (!kernels::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  expect_same_as_reference(avx2::dequant_q8_0, "avx2");
  expect_same_as_reference(avx2::dequant_q4_0, "avx2", DType::Q4_0);
}

TEST(KvQuantize, Avx2MatchesReference) {
  if (!kernels::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  expect_store_same_as_reference(avx2::store_q8_0, "avx2", DType::Q8_0);
  expect_store_same_as_reference(avx2::store_q4_0, "avx2", DType::Q4_0);
}

TEST(KvQuantize, Avx512MatchesReference) {
  if (kernels::cpu_kernel_isa() < kernels::KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 on this CPU (or STRATA_NO_AVX512)";
  }
  expect_store_same_as_reference(avx512::store_q8_0, "avx512", DType::Q8_0);
  expect_store_same_as_reference(avx512::store_q4_0, "avx512", DType::Q4_0);
}

TEST(KvQuantize, DispatchedKernelsMatchReference) {
  expect_store_same_as_reference(kv_quantize().q8_0, kv_quantize().name, DType::Q8_0);
  expect_store_same_as_reference(kv_quantize().q4_0, kv_quantize().name, DType::Q4_0);
}

TEST(KvDequant, Avx512Bf16MatchesReference) {
  if (!kernels::cpu_has_avx512_bf16()) GTEST_SKIP() << "no AVX512_BF16 on this CPU";
  expect_same_as_reference(avx512bf16::dequant_q8_0, "avx512-bf16");
  expect_same_as_reference(avx512bf16::dequant_q4_0, "avx512-bf16", DType::Q4_0);
}

TEST(KvDequant, Avx512MatchesReference) {
  if (kernels::cpu_kernel_isa() < kernels::KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 on this CPU (or STRATA_NO_AVX512)";
  }
  expect_same_as_reference(avx512::dequant_q8_0, "avx512");
  expect_same_as_reference(avx512::dequant_q4_0, "avx512", DType::Q4_0);
}

}  // namespace
}  // namespace strata::attention
