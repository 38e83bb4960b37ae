// AVX2+FMA tile kernels for paged attention (see tile_kernels.h).
//
// scores: per key row, one 8-lane fma accumulator over head_dim in steps of 8, reduced
// with kernels::avx2::hsum, then the head_dim % 8 tail added one by one with fma.
// accumulate: per 8-wide column strip of acc, acc * correction, then fma(p[j], v_j, acc)
// for j in order; the tail columns the same way in scalar fma.
#include "attention/tile_kernels.h"
#include "kernels/quant/avx2_util.h"

namespace strata::attention::avx2 {

using kernels::avx2::fma_ss;
using kernels::avx2::hsum;

float scores(const float* q, const float* k, int64_t n, int64_t head_dim, float scale,
             float* sc) {
  const int64_t vec = head_dim / 8 * 8;
  __m256 vmax = _mm256_set1_ps(-__builtin_inff());
  float block_max = -__builtin_inff();
  int64_t j = 0;
  // Four key rows at a time: four independent accumulator chains share each q load.
  for (; j + 4 <= n; j += 4) {
    const float* k0 = k + j * head_dim;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t d = 0; d < vec; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + d), a0);
      a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + head_dim + d), a1);
      a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 2 * head_dim + d), a2);
      a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + 3 * head_dim + d), a3);
    }
    float s[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
    for (int i = 0; i < 4; ++i) {
      for (int64_t d = vec; d < head_dim; ++d) s[i] = fma_ss(q[d], k0[i * head_dim + d], s[i]);
      sc[j + i] = s[i] * scale;
    }
    vmax = _mm256_max_ps(vmax, _mm256_setr_ps(sc[j], sc[j + 1], sc[j + 2], sc[j + 3], sc[j],
                                              sc[j], sc[j], sc[j]));
  }
  for (; j < n; ++j) {
    const float* kj = k + j * head_dim;
    __m256 a = _mm256_setzero_ps();
    for (int64_t d = 0; d < vec; d += 8) {
      a = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(kj + d), a);
    }
    float s = hsum(a);
    for (int64_t d = vec; d < head_dim; ++d) s = fma_ss(q[d], kj[d], s);
    sc[j] = s * scale;
    block_max = sc[j] > block_max ? sc[j] : block_max;
  }
  const float m = kernels::avx2::hmax(vmax);
  return m > block_max ? m : block_max;
}

void accumulate(const float* p, const float* v, int64_t n, int64_t head_dim, float correction,
                float* acc) {
  const int64_t vec = head_dim / 8 * 8;
  const __m256 c = _mm256_set1_ps(correction);
  int64_t d = 0;
  // Four strips (32 columns) per pass keep four accumulators in registers across all j.
  for (; d + 32 <= vec; d += 32) {
    __m256 a0 = _mm256_mul_ps(_mm256_loadu_ps(acc + d), c);
    __m256 a1 = _mm256_mul_ps(_mm256_loadu_ps(acc + d + 8), c);
    __m256 a2 = _mm256_mul_ps(_mm256_loadu_ps(acc + d + 16), c);
    __m256 a3 = _mm256_mul_ps(_mm256_loadu_ps(acc + d + 24), c);
    for (int64_t j = 0; j < n; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* vj = v + j * head_dim + d;
      a0 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj), a0);
      a1 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8), a1);
      a2 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 16), a2);
      a3 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 24), a3);
    }
    _mm256_storeu_ps(acc + d, a0);
    _mm256_storeu_ps(acc + d + 8, a1);
    _mm256_storeu_ps(acc + d + 16, a2);
    _mm256_storeu_ps(acc + d + 24, a3);
  }
  for (; d < vec; d += 8) {
    __m256 a = _mm256_mul_ps(_mm256_loadu_ps(acc + d), c);
    for (int64_t j = 0; j < n; ++j) {
      a = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(v + j * head_dim + d), a);
    }
    _mm256_storeu_ps(acc + d, a);
  }
  for (; d < head_dim; ++d) {
    float a = acc[d] * correction;
    for (int64_t j = 0; j < n; ++j) a = fma_ss(p[j], v[j * head_dim + d], a);
    acc[d] = a;
  }
}

}  // namespace strata::attention::avx2
