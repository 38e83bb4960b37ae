// AVX-512 tile fold (see tile_kernels.h and fold_simd.h): 16 keys per register, which is
// a whole KV block at the default block size.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "attention/fold_simd.h"
#include "attention/tile_kernels.h"

namespace strata::attention::avx512 {
namespace {

struct Avx512Vec {
  static constexpr int64_t W = 16;
  using F = __m512;
  using Mask = __mmask16;
  static Mask first(int64_t n) {
    return n >= W ? Mask(0xffff) : n <= 0 ? Mask(0) : static_cast<Mask>((1u << n) - 1);
  }
  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float x) { return _mm512_set1_ps(x); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F maskz_load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static F load_elems(const float* p, Mask m, int64_t) { return _mm512_maskz_loadu_ps(m, p); }
  static F load_elems(const uint16_t* p, Mask m, int64_t) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static F load_or_neg_inf(const float* p, Mask m) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), m, p);
  }
  static void store(float* p, F x) { _mm512_storeu_ps(p, x); }
  static void mask_store(float* p, Mask m, F x) { _mm512_mask_storeu_ps(p, m, x); }
  static F zero_outside(F x, Mask m) { return _mm512_maskz_mov_ps(m, x); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static float first_lane(F x) { return _mm512_cvtss_f32(x); }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }
  static float reduce_add(F v) { return _mm512_reduce_add_ps(v); }
  static F round_nearest(F x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static F times_pow2(F y, F n) { return _mm512_scalef_ps(y, n); }
};

}  // namespace

void fold(const FoldTile& tile) {
  simd::fold<Avx512Vec>(tile);
}

}  // namespace strata::attention::avx512
