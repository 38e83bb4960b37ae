// IEEE half and bfloat16 conversions (portable, bit exact, round-to-nearest-even).
#pragma once

#include <cstdint>
#include <cstring>

namespace strata {

inline float fp32_from_bits(uint32_t w) {
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

inline uint32_t fp32_to_bits(float f) {
  uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  return w;
}

// Half -> float, exact for every input including subnormals, infinities and NaN.
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ffu;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return fp32_from_bits(bits);
}

// Float -> half with round-to-nearest-even; overflow goes to infinity.
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = fp32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t e = abs >> 23;
    const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - e;  // 14..24
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    uint32_t out = m >> shift;
    if (rem > mid || (rem == mid && (out & 1u))) ++out;
    return static_cast<uint16_t>(sign | out);
  }
  uint32_t out = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) ++out;
  return static_cast<uint16_t>(sign | out);
}

inline float bf16_to_fp32(uint16_t h) {
  return fp32_from_bits(static_cast<uint32_t>(h) << 16);
}

// Float -> bfloat16 with round-to-nearest-even; NaN stays NaN.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = fp32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64u);
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1u))) >> 16);
}

}  // namespace strata
