// avx2 quantize-on-write of q8_0 / q4_0 KV rows (see kv_quantize.h): the group max,
// the rounding and the clamping 8 elements per register; the row loops and stores are
// kv_quantize_rows.h's. Same bytes as kv/kv_quant.h's references: max is exact, the scale
// is computed by the same scalar code, and each element is x * inv rounded to nearest
// even, as nearbyint.
#include <immintrin.h>

#include "attention/kv_quantize.h"
#include "attention/kv_quantize_rows.h"

namespace strata::attention::avx2 {
namespace {

inline __m256 abs8(__m256 x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

struct Ops {
  // max |x| over n (16 or 32) elements; NaNs are skipped, as std::fmax does (max_ps returns
  // its second operand, the running max, when the first is NaN).
  static float group_amax(const float* x, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) acc = _mm256_max_ps(abs8(_mm256_loadu_ps(x + i)), acc);
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }

  // The first element of largest magnitude amax (> 0), as q4_0_scale's strict > keeps.
  static float first_at(const float* x, int64_t n, float amax) {
    const __m256 a = _mm256_set1_ps(amax);
    for (int64_t i = 0; i < n; i += 8) {
      const int mask =
          _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + i)), a, _CMP_EQ_OQ));
      if (mask != 0) return x[i + __builtin_ctz(static_cast<unsigned>(mask))];
    }
    return 0.0f;  // not reached
  }

  // n elements times inv, rounded, clamped to [lo, hi], plus bias, as int8 into out.
  static void quantize(const float* x, int64_t n, float inv, float lo, float hi, int bias,
                       int8_t* out) {
    const __m256 vinv = _mm256_set1_ps(inv), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
    const __m256i vb = _mm256_set1_epi32(bias);
    for (int64_t i = 0; i < n; i += 8) {
      __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv),
                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      r = _mm256_min_ps(_mm256_max_ps(r, vlo), vhi);  // a NaN becomes lo, as fmax(lo, NaN)
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(r), vb);
      __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      p = _mm_packs_epi16(p, p);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), p);
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

}  // namespace strata::attention::avx2
