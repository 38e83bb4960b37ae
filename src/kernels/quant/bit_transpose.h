// Bit-matrix transpose for the load-time repacks of bit planes (Q3_K's bit 2, Q5_K's fifth
// bits): the repacked layouts regroup those bits by quant vector, which bit by bit cost
// several cycles a bit (seconds to load a billion-parameter file).
#pragma once

#include <cstdint>

namespace strata::kernels {

// The 8 x 8 bit matrix in x (bit c of byte r is row r, column c) transposed: bit r of byte
// c of the result is bit c of byte r of x. Three rounds of swapping off-diagonal blocks.
constexpr uint64_t transpose_bits_8x8(uint64_t x) {
  uint64_t t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAULL;
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCULL;
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ULL;
  x ^= t ^ (t << 28);
  return x;
}

}  // namespace strata::kernels
