// Q4_K's packed 6-bit sub-block scales and mins (blocks.h), unpacked for the SIMD K-quant
// kernels. Internal linkage: the AVX2 and AVX-512 files include it with different
// instruction sets, so each keeps its own copy.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace strata::kernels {
namespace {

// Unpacks the 6-bit scales and mins of a Q4_K block (layout in blocks.h), four per 32-bit
// word: bytes 0-7 of the result are sc[0..7], bytes 8-15 are m[0..7].
inline __m128i unpack_q4_k_scales_mins(const uint8_t* packed) {
  uint32_t u0, u1, u2;
  std::memcpy(&u0, packed, 4);
  std::memcpy(&u1, packed + 4, 4);
  std::memcpy(&u2, packed + 8, 4);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t sc_lo = u0 & low6;
  const uint32_t m_lo = u1 & low6;
  const uint32_t sc_hi = (u2 & low4) | (((u0 >> 6) & low2) << 4);
  const uint32_t m_hi = ((u2 >> 4) & low4) | (((u1 >> 6) & low2) << 4);
  return _mm_set_epi32(static_cast<int>(m_hi), static_cast<int>(m_lo), static_cast<int>(sc_hi),
                       static_cast<int>(sc_lo));
}

}  // namespace
}  // namespace strata::kernels
