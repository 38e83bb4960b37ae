// avx512 quantize-on-write of q8_0 / q4_0 KV rows (see kv_quantize.h): the group max,
// the rounding and the clamping 16 elements per register; the row loops and stores are
// kv_quantize_rows.h's. Same bytes as kv/kv_quant.h's references: max is exact, the scale
// is computed by the same scalar code, and each element is x * inv rounded to nearest
// even, as nearbyint.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "attention/kv_quantize.h"
#include "attention/kv_quantize_rows.h"

namespace strata::attention::avx512 {
namespace {
struct Ops {
  // max |x| over n (16 or 32) elements; NaNs are skipped, as std::fmax does (max_ps returns
  // its second operand, the running max, when the first is NaN).
  static float group_amax(const float* x, int64_t n) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16)
      acc = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), acc);
    return _mm512_reduce_max_ps(acc);
  }

  // The first element of largest magnitude amax (> 0), as q4_0_scale's strict > keeps.
  static float first_at(const float* x, int64_t n, float amax) {
    const __m512 a = _mm512_set1_ps(amax);
    for (int64_t i = 0; i < n; i += 16) {
      const __mmask16 mask =
          _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + i)), a, _CMP_EQ_OQ);
      if (mask != 0) return x[i + __builtin_ctz(static_cast<unsigned>(mask))];
    }
    return 0.0f;  // not reached
  }

  // n elements times inv, rounded, clamped to [lo, hi], plus bias, as int8 into out.
  static void quantize(const float* x, int64_t n, float inv, float lo, float hi, int bias,
                       int8_t* out) {
    const __m512 vinv = _mm512_set1_ps(inv), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    const __m512i vb = _mm512_set1_epi32(bias);
    for (int64_t i = 0; i < n; i += 16) {
      __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vinv),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      r = _mm512_min_ps(_mm512_max_ps(r, vlo), vhi);  // a NaN becomes lo, as fmax(lo, NaN)
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(r), vb);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtsepi32_epi8(q));
    }
  }
};

}  // namespace

void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  kv_rows::store_q8_0<Ops>(tile, keys, src, slot, bs, hd);
}

void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  kv_rows::store_q4_0<Ops>(tile, keys, src, slot, bs, hd);
}

}  // namespace strata::attention::avx512
