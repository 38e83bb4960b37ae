// latent_fold.h compiled with AVX2+FMA+F16C (8 heads per register).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

// The fold's fixed-width head loops are written to be vectorised; -O2's cheap cost model
// leaves them scalar (a 4K-context decode step of deepseek2-1b ran at 3 tok/s), so this
// file's functions get the full vectoriser. It changes no sum's order (no -ffast-math).
#pragma GCC optimize("O3")

#define LATENT_NS latent_avx2
#include "attention/latent_fold.h"

namespace strata::attention::latent_avx2 {

void widen_f16(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

}  // namespace strata::attention::latent_avx2
