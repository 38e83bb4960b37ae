// The bit packing of the load-time repacks: transpose_bits_8x8 against the bit-by-bit
// definition, and six-bit strings written whole and read value by value.
#include <gtest/gtest.h>

#include <cstring>

#include "kernel_test_util.h"
#include "kernels/quant/bit_transpose.h"
#include "kernels/quant/kernels_ref.h"

namespace strata::kernels {
namespace {

uint64_t transpose_by_bits(uint64_t x) {
  uint64_t out = 0;
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 8; ++c) out |= ((x >> (8 * r + c)) & 1) << (8 * c + r);
  }
  return out;
}

TEST(BitTranspose, MatchesTheDefinitionAndUndoesItself) {
  test::Rng rng(7);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t x = rng.next();
    EXPECT_EQ(transpose_bits_8x8(x), transpose_by_bits(x));
    EXPECT_EQ(transpose_bits_8x8(transpose_bits_8x8(x)), x);
  }
  for (int b = 0; b < 64; ++b) {  // every single bit
    EXPECT_EQ(transpose_bits_8x8(uint64_t{1} << b), transpose_by_bits(uint64_t{1} << b));
  }
}

TEST(SixBitStrings, WrittenWholeReadValueByValue) {
  test::Rng rng(11);
  for (int round = 0; round < 200; ++round) {
    int values[16];
    for (int& v : values) v = static_cast<int>(rng.next() % 64);
    uint8_t string[12];
    std::memset(string, 0xa5, sizeof string);  // overwritten, not or-ed into
    ref::put_six_bit_values(string, values);
    for (int j = 0; j < 16; ++j) EXPECT_EQ(ref::six_bit_value(string, j), values[j]) << j;
  }
}

}  // namespace
}  // namespace strata::kernels
