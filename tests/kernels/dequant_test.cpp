// Dequantization of hand-built blocks must reproduce the format definition bit for bit.
// Expected values are written out from the GGUF/ggml layout descriptions, independently of
// the library's unpacking code, and chosen so every product is exact in float.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/fp16.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

// Runs to_float of both tables on raw bytes and compares with the expectation bit for bit.
void expect_dequant(DType t, const void* blocks, const std::vector<float>& want) {
  const auto n = static_cast<int64_t>(want.size());
  for (const TypeTraits* traits : {&reference_type_traits(t), &type_traits(t)}) {
    std::vector<float> got(want.size(), -12345.0f);
    traits->to_float(blocks, got.data(), n);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(fp32_to_bits(got[i]), fp32_to_bits(want[i]))
          << dtype_name(t) << " element " << i << ": got " << got[i] << " want " << want[i];
    }
  }
}

TEST(Dequant, BlockLayoutsMatchDtypeTable) {
  EXPECT_EQ(sizeof(BlockQ8_0), dtype_info(DType::Q8_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_0), dtype_info(DType::Q4_0).type_size);
  EXPECT_EQ(sizeof(BlockQ4_K), dtype_info(DType::Q4_K).type_size);
  EXPECT_EQ(sizeof(BlockQ6_K), dtype_info(DType::Q6_K).type_size);
  EXPECT_EQ(sizeof(BlockQ8_K), dtype_info(DType::Q8_K).type_size);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);  // d comes last in Q6_K
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
}

TEST(Dequant, Q8_0) {
  // Two blocks: d = 0.5 with quants -128, -120, ..., 120; then d = -2^-24 (the smallest
  // negative subnormal half) with quants 0, -1, ..., -31.
  uint8_t raw[68] = {};
  const uint16_t d0 = 0x3800, d1 = 0x8001;
  std::memcpy(raw, &d0, 2);
  std::memcpy(raw + 34, &d1, 2);
  std::vector<float> want;
  for (int i = 0; i < 32; ++i) {
    raw[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(8 * i - 128));
    want.push_back(0.5f * static_cast<float>(8 * i - 128));
  }
  for (int i = 0; i < 32; ++i) {
    raw[36 + i] = static_cast<uint8_t>(static_cast<int8_t>(-i));
    // (-2^-24) * (-i); for i = 0 the product of a negative scale and +0 is -0.
    want.push_back(i == 0 ? -0.0f : std::ldexp(static_cast<float>(i), -24));
  }
  expect_dequant(DType::Q8_0, raw, want);
}

TEST(Dequant, Q4_0) {
  // d = 2.0; byte i holds element i in its low nibble (value i) and element 16 + i in
  // its high nibble (value 15 - i). value = (q - 8) * d.
  uint8_t raw[18];
  const uint16_t d = 0x4000;
  std::memcpy(raw, &d, 2);
  for (int i = 0; i < 16; ++i) raw[2 + i] = static_cast<uint8_t>(i | ((15 - i) << 4));
  std::vector<float> want(32);
  for (int i = 0; i < 16; ++i) {
    want[i] = static_cast<float>(i - 8) * 2.0f;
    want[16 + i] = static_cast<float>(15 - i - 8) * 2.0f;
  }
  expect_dequant(DType::Q4_0, raw, want);
}

TEST(Dequant, Q4_K) {
  // Sub-block scales and mins chosen to exercise every bit of the 6-bit packing:
  const int sc[8] = {1, 2, 63, 17, 33, 48, 5, 60};
  const int mn[8] = {0, 3, 62, 9, 40, 63, 1, 31};
  // Packed by hand: bytes 0-3 = sc[0..3] | high 2 bits of sc[4..7] << 6,
  // bytes 4-7 = mn[0..3] | high 2 bits of mn[4..7] << 6,
  // bytes 8-11 = low 4 bits of sc[4..7] | low 4 bits of mn[4..7] << 4.
  // e.g. sc[4] = 33 = 0b10'0001: byte 0 = 1 | 2 << 6 = 129, byte 8 low nibble = 1.
  const uint8_t scales[12] = {129, 194, 63, 209, 128, 195, 62, 73, 129, 240, 21, 252};
  uint8_t raw[144];
  const uint16_t d = 0x3400, dmin = 0x3000;  // 0.25 and 0.125
  std::memcpy(raw, &d, 2);
  std::memcpy(raw + 2, &dmin, 2);
  std::memcpy(raw + 4, scales, 12);
  // qs byte 32k + l: low nibble = element 64k + l (sub-block 2k), high nibble =
  // element 64k + 32 + l (sub-block 2k + 1).
  for (int k = 0; k < 4; ++k) {
    for (int l = 0; l < 32; ++l)
      raw[16 + 32 * k + l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  }
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const bool high = (e % 64) >= 32;
    const int l = e % 32;
    const int q = high ? 15 - l % 16 : l % 16;
    const int j = 2 * (e / 64) + (high ? 1 : 0);
    want[e] = (0.25f * static_cast<float>(sc[j])) * static_cast<float>(q) -
              0.125f * static_cast<float>(mn[j]);
  }
  expect_dequant(DType::Q4_K, raw, want);
}

TEST(Dequant, Q6_K) {
  // d = 0.5, sub-block scales -128, -111, ..., 127, quant of element e = (7e + 3) % 64.
  // Placement (scattered per element, the inverse of the format's gather): with
  // h = e / 128, g = (e % 128) / 32, l = e % 32, the low 4 bits go into
  // ql[64h + 32(g % 2) + l] (low nibble for g < 2, high nibble otherwise) and the top 2 bits
  // into bits 2g, 2g+1 of qh[32h + l]. value = d * scale[e / 16] * (q - 32).
  uint8_t raw[210] = {};
  std::vector<float> want(256);
  for (int s = 0; s < 16; ++s)
    raw[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(17 * s - 128));
  const uint16_t d = 0x3800;
  std::memcpy(raw + 208, &d, 2);
  for (int e = 0; e < 256; ++e) {
    const int q = (7 * e + 3) % 64;
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    uint8_t& low = raw[64 * h + 32 * (g % 2) + l];
    low = static_cast<uint8_t>(low | ((q & 15) << (g < 2 ? 0 : 4)));
    uint8_t& top = raw[128 + 32 * h + l];
    top = static_cast<uint8_t>(top | ((q >> 4) << (2 * g)));
    want[e] = (0.5f * static_cast<float>(17 * (e / 16) - 128)) * static_cast<float>(q - 32);
  }
  expect_dequant(DType::Q6_K, raw, want);
}

TEST(Dequant, Q8_K) {
  BlockQ8_K block{};
  block.d = 0.375f;
  std::vector<float> want(256);
  for (int i = 0; i < 256; ++i) {
    block.qs[i] = static_cast<int8_t>(i - 128);
    want[i] = 0.375f * static_cast<float>(i - 128);
  }
  expect_dequant(DType::Q8_K, &block, want);
}

TEST(Dequant, PlainFloats) {
  const std::vector<float> f32 = {1.5f, -0.0f, 3.0e38f, 1e-45f};
  expect_dequant(DType::F32, f32.data(), f32);
  const uint16_t bf16[4] = {0x3fc0, 0x8000, 0x7f80, 0x0001};  // 1.5, -0, inf, 2^-133
  expect_dequant(DType::BF16, bf16, {1.5f, -0.0f, INFINITY, std::ldexp(1.0f, -133)});
}

TEST(Traits, UnsupportedTypesThrow) {
  EXPECT_THROW(type_traits(DType::Q8_1), Error);
  EXPECT_THROW(reference_type_traits(DType::I32), Error);
  EXPECT_EQ(type_traits(DType::Q8_K).vec_dot, nullptr);
  EXPECT_EQ(type_traits(DType::Q4_K).vec_dot_type, DType::Q8_K);
  EXPECT_EQ(type_traits(DType::Q4_0).vec_dot_type, DType::Q8_0);
  EXPECT_EQ(type_traits(DType::F16).vec_dot_type, DType::F32);
  EXPECT_THROW(row_bytes(DType::Q4_K, 100), Error);
  EXPECT_EQ(row_bytes(DType::Q4_K, 512), 288);
}

}  // namespace
}  // namespace strata::kernels
