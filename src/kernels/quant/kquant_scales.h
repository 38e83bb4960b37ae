// The packed sub-block scales of Q4_K/Q5_K, Q3_K and IQ4_XS (blocks.h), unpacked for the
// SIMD K-quant kernels. Internal linkage: the AVX2 and AVX-512 files include it with different
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

#ifdef __AVX2__
// unpack_q4_k_scales_mins of a Q4_K, Q4_K_X16 or Q5_K_X16 block (d, dmin and the 12 scale
// bytes first) from one 16-byte load of its start, the same bits in 8 vector instructions
// instead of ~20 scalar ones and 4 inserts (the GEMV's unpack per super-block). The 32-bit
// words are the scalar version's: [sc_lo, sc_hi, m_lo, m_hi] from u0, u2 | u0 >> 6, u1,
// u2 >> 4 | u1 >> 6. The block's d and dmin are halves 0 and 1 of the same load.
inline __m128i unpack_q4_k_block_scales_mins(__m128i head) {
  // [u0, u2, u1, u2] and [0, u0, 0, u1] (bytes 4-15 of the block are u0, u1, u2).
  const __m128i a = _mm_shuffle_epi8(
      head, _mm_setr_epi8(4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15));
  const __m128i b = _mm_shuffle_epi8(
      head, _mm_setr_epi8(-1, -1, -1, -1, 4, 5, 6, 7, -1, -1, -1, -1, 8, 9, 10, 11));
  const __m128i lo = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                   _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  // Bits 6-7 of each byte to bits 4-5 (the scalar version's (u >> 6 & low2) << 4).
  const __m128i hi = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_set1_epi8(0x30));
  return _mm_or_si128(lo, hi);
}
#endif

#ifdef __AVX2__
// The 16 6-bit scales of a Q3_K block minus their bias 32, as int8 in sub-block order.
// Four sub-blocks per 32-bit word: word k holds the low nibbles of bytes 0-3 (k = 0),
// 4-7 (k = 1) or their high nibbles (k = 2, 3), and bits 2k, 2k + 1 of bytes 8-11 on top.
// One 16-byte load that ends with the 12 scale bytes: `packed` must have 4 readable bytes
// before it (the quants precede the scales in Q3_K and Q3_K_X16 blocks), so the load never
// reaches past the block.
inline __m128i unpack_q3_k_scales(const uint8_t* packed) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed - 4));
  // Words [a0, a1, a0, a1] >> [0, 0, 4, 4] give the low nibbles; [a2] x 4 >> 2k the high bits.
  const __m128i low = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 1)), _mm_setr_epi32(0, 0, 4, 4)),
      _mm_set1_epi8(0x0f));
  const __m128i high = _mm_and_si128(
      _mm_srlv_epi32(_mm_shuffle_epi32(v, _MM_SHUFFLE(3, 3, 3, 3)), _mm_setr_epi32(0, 2, 4, 6)),
      _mm_set1_epi8(0x03));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi32(high, 4)), _mm_set1_epi8(32));
}
#endif

// The 8 6-bit scales of an IQ4_XS block (0..63, still biased by 32), one byte each in the
// low 8 bytes. Scale j is nibble j of scales_l (low nibble first) with bits 2j, 2j + 1 of
// scales_h on top; both are spread to one byte per scale in a 64-bit register (no
// store-to-load round trip through memory).
inline __m128i iq4_xs_scale_bytes(uint16_t scales_h, const uint8_t* scales_l) {
  uint32_t l32;
  std::memcpy(&l32, scales_l, 4);
  uint64_t lo = l32;
  lo = (lo | (lo << 16)) & 0x0000ffff0000ffffull;
  lo = (lo | (lo << 8)) & 0x00ff00ff00ff00ffull;
  lo = (lo | (lo << 4)) & 0x0f0f0f0f0f0f0f0full;
  uint64_t hi = scales_h;
  hi = (hi | (hi << 24)) & 0x000000ff000000ffull;
  hi = (hi | (hi << 12)) & 0x000f000f000f000full;
  hi = (hi | (hi << 6)) & 0x0303030303030303ull;
  return _mm_cvtsi64_si128(static_cast<long long>(lo | (hi << 4)));
}

// Six-bit strings (ref::six_bit_value: value j at bits 6j .. 6j + 5 of 12 bytes; Q3_K_X16's
// scales, the K pairs' scales and mins): for lane j, the offsets of the two bytes that hold
// value j in the 16 bytes ending with the string (-128: none; value 15 lies in byte 11
// alone) as a vpshufb control for dword j, and its shift.
struct SixBitTables {
  alignas(64) int8_t bytes[64];
  alignas(64) int32_t shifts[16];
};
inline constexpr SixBitTables kSixBitLanes = [] {
  SixBitTables t{};
  for (int j = 0; j < 16; ++j) {
    const int byte = 6 * j / 8;
    t.bytes[4 * j] = static_cast<int8_t>(4 + byte);
    t.bytes[4 * j + 1] = static_cast<int8_t>(byte + 1 < 12 ? 5 + byte : -128);
    t.bytes[4 * j + 2] = t.bytes[4 * j + 3] = -128;
    t.shifts[j] = 6 * j % 8;
  }
  return t;
}();

#ifdef __AVX2__
// Values 8h .. 8h + 7 of a six-bit string whose 12 bytes are window[4..15] (h < 2), one int32
// lane each: six_bit_lanes' steps on one 256-bit half.
inline __m256i six_bit_lanes_half(const uint8_t* window, int h) {
  const __m256i v =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(window)));
  const __m256i two = _mm256_shuffle_epi8(
      v, _mm256_load_si256(reinterpret_cast<const __m256i*>(kSixBitLanes.bytes) + h));
  return _mm256_and_si256(
      _mm256_srlv_epi32(
          two, _mm256_load_si256(reinterpret_cast<const __m256i*>(kSixBitLanes.shifts) + h)),
      _mm256_set1_epi32(63));
}
#endif

#ifdef __AVX512BW__
// The 16 values of a six-bit string whose 12 bytes are window[4..15], one int32 lane each:
// the two bytes of each gathered into its dword by one vpshufb of the 16 bytes (in every
// 128-bit lane), then a variable shift and an and.
inline __m512i six_bit_lanes(const uint8_t* window) {
  const __m512i v =
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(window)));
  const __m512i two = _mm512_shuffle_epi8(v, _mm512_load_si512(kSixBitLanes.bytes));
  return _mm512_and_si512(_mm512_srlv_epi32(two, _mm512_load_si512(kSixBitLanes.shifts)),
                          _mm512_set1_epi32(63));
}
#endif

// The 8 6-bit scales of an IQ4_XS block minus their bias 32, as int16.
inline __m128i unpack_iq4_xs_scales(uint16_t scales_h, const uint8_t* scales_l) {
  return _mm_sub_epi16(_mm_cvtepu8_epi16(iq4_xs_scale_bytes(scales_h, scales_l)),
                       _mm_set1_epi16(32));
}

}  // namespace
}  // namespace strata::kernels
