// AVX2+FMA versions of ops.h's element-wise ops (internal to kernels/; ops.h dispatches).
// swiglu differs from the scalar reference by float rounding (a polynomial exp, about
// 1 ulp) except below g = -80, where both give values under 1e-33 (see ops_avx2.cpp); rmsnorm sums
// its squares in a different (fixed) order, also in double. rope, add and scale give the
// reference's bits, argmax its index.
#pragma once

#include <cstdint>

namespace strata::kernels::avx2 {

void swiglu(float* gate, const float* up, int64_t n);
void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps);
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox);
void add(float* x, const float* y, int64_t n);
void scale(float* out, const float* in, float s, int64_t n);
int64_t argmax(const float* x, int64_t n);

}  // namespace strata::kernels::avx2
