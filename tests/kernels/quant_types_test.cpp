// The GGUF types beyond Q4_0/Q8_0/Q4_K/Q6_K (Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K, Q3_K, Q5_K,
// IQ4_XS): block geometry, dequantization against decoders written here from ggml's
// published loops (ggml-quants.c's dequantize_row_* walk the blocks with running shifts and
// masks; the library unpacks by element index, so the two are independent), and
// behaviour on hostile blocks. Dot products and matmuls of these types against the scalar
// reference are covered by vec_dot_test / matmul_test / isa_levels_test, which iterate
// over test::weight_types().
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "core/fp16.h"
#include "kernel_test_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/traits.h"

namespace strata::kernels {
namespace {

using test::half_at;
using test::Rng;

constexpr DType kNewTypes[] = {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                               DType::Q2_K, DType::Q3_K, DType::Q5_K, DType::IQ4_XS};

constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                1,    13,   25,  38,  53,  69,  89,  113};

TEST(QuantTypes, BlockLayoutsMatchDtypeTable) {
  EXPECT_EQ(sizeof(BlockQ4_1), dtype_info(DType::Q4_1).type_size);
  EXPECT_EQ(sizeof(BlockQ5_0), dtype_info(DType::Q5_0).type_size);
  EXPECT_EQ(sizeof(BlockQ5_1), dtype_info(DType::Q5_1).type_size);
  EXPECT_EQ(sizeof(BlockIQ4_NL), dtype_info(DType::IQ4_NL).type_size);
  EXPECT_EQ(sizeof(BlockQ2_K), dtype_info(DType::Q2_K).type_size);
  EXPECT_EQ(sizeof(BlockQ3_K), dtype_info(DType::Q3_K).type_size);
  EXPECT_EQ(sizeof(BlockQ5_K), dtype_info(DType::Q5_K).type_size);
  EXPECT_EQ(sizeof(BlockIQ4_XS), dtype_info(DType::IQ4_XS).type_size);
  // GGUF type ids and the sizes llama.cpp's files use (ggml-common.h's static_asserts).
  EXPECT_EQ(dtype_info(20u)->name, "iq4_nl");
  EXPECT_EQ(dtype_info(23u)->name, "iq4_xs");
  EXPECT_EQ(dtype_info(DType::Q2_K).type_size, 84u);
  EXPECT_EQ(dtype_info(DType::Q3_K).type_size, 110u);
  EXPECT_EQ(dtype_info(DType::Q5_K).type_size, 176u);
  EXPECT_EQ(dtype_info(DType::IQ4_XS).type_size, 136u);
  EXPECT_EQ(offsetof(BlockQ2_K, d), 80u);
  EXPECT_EQ(offsetof(BlockQ3_K, scales), 96u);
  EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
  EXPECT_EQ(offsetof(BlockQ5_K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
  EXPECT_EQ(offsetof(BlockIQ4_XS, qs), 8u);
  EXPECT_EQ(offsetof(BlockQ5_0, qs), 6u);
  EXPECT_EQ(offsetof(BlockQ5_1, qs), 8u);
  for (DType t : kNewTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_from_name("IQ4_XS"), DType::IQ4_XS);
}

// --- decoders in the shape of ggml's dequantize_row_* loops ---

void decode_legacy(DType t, const uint8_t* blk, float* y) {
  const float d = half_at(blk);
  uint32_t qh = 0;
  if (t == DType::Q5_0) std::memcpy(&qh, blk + 2, 4);
  if (t == DType::Q5_1) std::memcpy(&qh, blk + 4, 4);
  const uint8_t* qs = blk + (t == DType::Q4_1   ? 4
                             : t == DType::Q5_0 ? 6
                             : t == DType::Q5_1 ? 8
                                                : 2);
  for (int j = 0; j < 16; ++j) {
    int x0 = qs[j] & 0x0f, x1 = qs[j] >> 4;
    const int xh0 = static_cast<int>(((qh >> j) << 4) & 0x10);
    const int xh1 = static_cast<int>((qh >> (j + 12)) & 0x10);
    switch (t) {
      case DType::Q4_1:
        y[j] = static_cast<float>(x0) * d + half_at(blk + 2);
        y[j + 16] = static_cast<float>(x1) * d + half_at(blk + 2);
        break;
      case DType::Q5_0:
        y[j] = static_cast<float>((x0 | xh0) - 16) * d;
        y[j + 16] = static_cast<float>((x1 | xh1) - 16) * d;
        break;
      case DType::Q5_1:
        y[j] = static_cast<float>(x0 | xh0) * d + half_at(blk + 2);
        y[j + 16] = static_cast<float>(x1 | xh1) * d + half_at(blk + 2);
        break;
      default:  // IQ4_NL
        y[j] = d * static_cast<float>(kValues[x0]);
        y[j + 16] = d * static_cast<float>(kValues[x1]);
        break;
    }
  }
}

void decode_q2_k(const uint8_t* blk, float* y) {
  const float d = half_at(blk + 80), min = half_at(blk + 82);
  const uint8_t* q = blk + 16;
  int is = 0;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const uint8_t sc = blk[is++];
        const float dl = d * static_cast<float>(sc & 0xf), ml = min * static_cast<float>(sc >> 4);
        for (int l = 0; l < 16; ++l)
          *y++ = dl * static_cast<float>((q[l + 16 * half] >> shift) & 3) - ml;
      }
      shift += 2;
    }
    q += 32;
  }
}

void decode_q3_k(const uint8_t* blk, float* y) {
  const uint8_t* hm = blk;
  const uint8_t* q = blk + 32;
  const float d = half_at(blk + 108);
  uint32_t aux[4];
  std::memcpy(aux, blk + 96, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((tmp >> 4) & 0x03030303) << 4);
  aux[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((tmp >> 6) & 0x03030303) << 4);
  aux[0] = (aux[0] & 0x0f0f0f0f) | (((tmp >> 0) & 0x03030303) << 4);
  aux[1] = (aux[1] & 0x0f0f0f0f) | (((tmp >> 2) & 0x03030303) << 4);
  int8_t scales[16];
  std::memcpy(scales, aux, 16);
  int is = 0;
  uint8_t m = 1;
  for (int n = 0; n < 256; n += 128) {
    int shift = 0;
    for (int j = 0; j < 4; ++j) {
      for (int half = 0; half < 2; ++half) {
        const float dl = d * static_cast<float>(scales[is++] - 32);
        for (int l = 16 * half; l < 16 * half + 16; ++l) {
          const int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
          *y++ = dl * static_cast<float>(v);
        }
      }
      shift += 2;
      m = static_cast<uint8_t>(m << 1);
    }
    q += 32;
  }
}

void decode_q5_k(const uint8_t* blk, float* y) {
  const float d = half_at(blk), min = half_at(blk + 2);
  const uint8_t* scales = blk + 4;
  const uint8_t* qh = blk + 16;
  const uint8_t* ql = blk + 48;
  int is = 0;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0; j < 256; j += 64) {
    int sc, m;
    test::q4_k_scale_min(scales, is, &sc, &m);
    const float d1 = d * static_cast<float>(sc), m1 = min * static_cast<float>(m);
    test::q4_k_scale_min(scales, is + 1, &sc, &m);
    const float d2 = d * static_cast<float>(sc), m2 = min * static_cast<float>(m);
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * static_cast<float>((ql[l] & 0xf) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * static_cast<float>((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    ql += 32;
    is += 2;
    u1 = static_cast<uint8_t>(u1 << 2);
    u2 = static_cast<uint8_t>(u2 << 2);
  }
}

void decode_iq4_xs(const uint8_t* blk, float* y) {
  const float d = half_at(blk);
  uint16_t scales_h;
  std::memcpy(&scales_h, blk + 2, 2);
  const uint8_t* scales_l = blk + 4;
  const uint8_t* qs = blk + 8;
  for (int ib = 0; ib < 8; ++ib) {
    const int ls = ((scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((scales_h >> 2 * ib) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    for (int j = 0; j < 16; ++j) {
      y[j] = dl * static_cast<float>(kValues[qs[j] & 0xf]);
      y[j + 16] = dl * static_cast<float>(kValues[qs[j] >> 4]);
    }
    y += 32;
    qs += 16;
  }
}

std::vector<float> decode(DType t, const std::vector<uint8_t>& bytes) {
  const size_t bs = dtype_info(t).type_size;
  const auto n = static_cast<size_t>(dtype_info(t).block_size);
  std::vector<float> y(bytes.size() / bs * n);
  for (size_t b = 0; b < bytes.size() / bs; ++b) {
    const uint8_t* blk = bytes.data() + b * bs;
    float* out = y.data() + b * n;
    switch (t) {
      case DType::Q2_K:
        decode_q2_k(blk, out);
        break;
      case DType::Q3_K:
        decode_q3_k(blk, out);
        break;
      case DType::Q5_K:
        decode_q5_k(blk, out);
        break;
      case DType::IQ4_XS:
        decode_iq4_xs(blk, out);
        break;
      default:
        decode_legacy(t, blk, out);
        break;
    }
  }
  return y;
}

// Random bytes (every bit pattern of quants, scales, masks) with moderate fp16 scales.
TEST(QuantTypes, DequantMatchesGgmlLoopsBitForBit) {
  Rng rng(31);
  for (DType t : kNewTypes) {
    const int64_t n = 4 * 256;
    const std::vector<uint8_t> w = test::random_weights(t, 1, n, rng);
    const std::vector<float> want = decode(t, w);
    for (const TypeTraits* traits : {&reference_type_traits(t), &type_traits(t)}) {
      std::vector<float> got(static_cast<size_t>(n), -12345.0f);
      traits->to_float(w.data(), got.data(), n);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(fp32_to_bits(got[i]), fp32_to_bits(want[i]))
            << dtype_name(t) << " element " << i << ": got " << got[i] << " want " << want[i];
      }
    }
  }
}

// Blocks whose fp16 scales are NaN or infinite, as a corrupt or hostile file may hold: the
// kernels must not crash or read out of bounds (ASan builds check the latter). The results
// are whatever IEEE arithmetic gives (NaN or infinity where those scales enter), never
// used to index anything.
TEST(QuantTypes, NanAndInfScalesDoNotCrash) {
  Rng rng(32);
  const uint16_t specials[] = {0x7e00 /* NaN */, 0x7c00 /* +inf */, 0xfc00 /* -inf */};
  for (DType t : kNewTypes) {
    const int64_t n = 512, rows = 3;
    std::vector<uint8_t> w = test::random_weights(t, rows, n, rng);
    const size_t bs = dtype_info(t).type_size;
    // The fp16 fields (d, and m or dmin where the type has one) of every other block.
    std::vector<size_t> fields = {0};
    if (t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q5_K) fields = {0, 2};
    if (t == DType::Q2_K) fields = {80, 82};
    if (t == DType::Q3_K) fields = {108};
    for (size_t b = 0; b < w.size() / bs; b += 2) {
      for (size_t f = 0; f < fields.size(); ++f)
        std::memcpy(w.data() + b * bs + fields[f], &specials[(b / 2 + f) % 3], 2);
    }
    const TypeTraits& traits = type_traits(t);
    const std::vector<float> x = test::normal_floats(rng, n * 2);
    const DType at = traits.vec_dot_type;
    const int64_t a_bytes = test::bytes_for(at, n), w_bytes = test::bytes_for(t, n);
    std::vector<uint8_t> act(static_cast<size_t>(2 * a_bytes));
    for (int k = 0; k < 2; ++k)
      type_traits(at).from_float(x.data() + k * n, act.data() + k * a_bytes, n);
    std::vector<float> y(static_cast<size_t>(rows * 2), 0.0f);
    traits.gemm(n, w.data(), w_bytes, rows, act.data(), a_bytes, 2, y.data(), rows);
    std::vector<float> deq(static_cast<size_t>(rows * n));
    traits.to_float(w.data(), deq.data(), rows * n);
    const float ref = reference_type_traits(t).vec_dot(n, w.data(), act.data());
    EXPECT_EQ(std::isfinite(ref), std::isfinite(y[0])) << dtype_name(t);
  }
}

// The quantizers on non-finite input: no crash, and the blocks decode without reading
// past the row (the values themselves are unspecified).
TEST(QuantTypes, QuantizersSurviveNonFiniteInput) {
  for (DType t : kNewTypes) {
    std::vector<float> x(512, 0.5f);
    x[3] = std::nanf("");
    x[300] = INFINITY;
    x[301] = -INFINITY;
    std::vector<uint8_t> bytes(static_cast<size_t>(test::bytes_for(t, 512)));
    reference_type_traits(t).from_float(x.data(), bytes.data(), 512);
    std::vector<float> y(512);
    type_traits(t).to_float(bytes.data(), y.data(), 512);
    SUCCEED() << dtype_name(t);
  }
}

}  // namespace
}  // namespace strata::kernels
