// AVX-512 versions of ops.h's element-wise ops (internal to kernels/; ops.h dispatches).
// swiglu gives the bits of avx2::swiglu in every element: the same steps on 16 lanes.
#pragma once

#include <cstdint>

namespace strata::kernels::avx512 {

void swiglu(float* gate, const float* up, int64_t n);

}  // namespace strata::kernels::avx512
