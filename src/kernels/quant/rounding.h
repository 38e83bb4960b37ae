// Rounding helpers shared by the reference quantizers. They avoid libm calls (baseline
// x86-64 has no round instruction) and are exactly matched by the AVX2 quantizers.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kernels {

// Nearest integer with ties to even (the default FP rounding mode), valid for any input:
// values beyond +-2^22 are clamped first and NaN gives 0. Adding 1.5 * 2^23 pushes the
// fraction out of the mantissa, so the FPU performs the rounding.
inline int nearest_int(float v) {
  constexpr float kLimit = 4194303.0f;             // 2^22 - 1
  if (!(v > -kLimit)) v = v < 0 ? -kLimit : 0.0f;  // also catches NaN
  if (v > kLimit) v = kLimit;
  const float shifted = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}

// C's roundf (ties away from zero) for |v| < 2^31; the result is clamped to
// [-limit, limit], with NaN treated like +infinity (as the AVX2 min/max sequence does).
inline float round_away_clamped(float v, float limit) {
  v = v < limit ? v : limit;  // NaN -> limit
  v = v > -limit ? v : -limit;
  const float t = static_cast<float>(static_cast<int32_t>(v));  // truncation, exact
  const float frac = v - t;                                     // exact
  if (frac >= 0.5f) return t + 1.0f;
  if (frac <= -0.5f) return t - 1.0f;
  return t;
}

}  // namespace strata::kernels
