// AVX2 versions of the element-wise ops that decode runs once per layer between the
// matmuls (ops.h): in a llama-1b decode profile the scalar SwiGLU (one expf per element)
// and RMSNorm (one dependent double add per element) took 3% of each token.
#include "kernels/cpu/ops_avx2.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/simd_exp.h"

namespace strata::kernels::avx2 {
namespace {

// silu(g) * u with t = exp(-|g|) <= 1, so exp_clamped's domain: silu(g) = g / (1 + t) for
// g >= 0 and g * t / (1 + t) below. Below g = -80, t stops at exp(-80) and silu(g) at
// g * 1.8e-35, where the exact value is smaller still: both round to nothing next to any
// other term of the model.
inline __m256 swiglu8(__m256 g, __m256 u) {
  const __m256 abs_g = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), g);
  const __m256 t = simd::exp_clamped<simd::Avx2Float>(_mm256_sub_ps(_mm256_setzero_ps(), abs_g));
  const __m256 num = _mm256_blendv_ps(g, _mm256_mul_ps(g, t), g);  // sign bit set: g * t
  return _mm256_mul_ps(_mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), t)), u);
}

}  // namespace

void swiglu(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(gate + i, swiglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {  // the tail through a padded copy
    alignas(32) float g[8] = {}, u[8] = {};
    for (int64_t k = i; k < n; ++k) g[k - i] = gate[k], u[k - i] = up[k];
    _mm256_store_ps(g, swiglu8(_mm256_load_ps(g), _mm256_load_ps(u)));
    for (int64_t k = i; k < n; ++k) gate[k] = g[k - i];
  }
}

void rmsnorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  // Sum of squares in double, 16 elements per step in four independent accumulators
  // (the scalar loop is one dependent add chain), combined in a fixed order.
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(),
                    _mm256_setzero_pd()};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k) {
      const __m256d v = _mm256_cvtps_pd(_mm_loadu_ps(x + i + 4 * k));
      acc[k] = _mm256_fmadd_pd(v, v, acc[k]);
    }
  }
  const __m256d s = _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3]));
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, s);
  double ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(n) + eps));
  const __m256 vs = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(out + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j), vs),
                                            _mm256_loadu_ps(weight + j)));
  }
  for (; j < n; ++j) out[j] = x[j] * scale * weight[j];
}

namespace {

// a, materialised: keeps GCC from contracting a product into the next add or subtract
// (an fma rounds once, the scalar reference twice).
template <class T>
inline T rounded(T a) {
  __asm__("" : "+x"(a));
  return a;
}

// x0 cos - x1 sin and x0 sin + x1 cos, each product rounded, as ref::rope.
inline void rotate8(float* p0, float* p1, const float* cos, const float* sin) {
  const __m256 x0 = _mm256_loadu_ps(p0), x1 = _mm256_loadu_ps(p1);
  const __m256 c = _mm256_loadu_ps(cos), s = _mm256_loadu_ps(sin);
  _mm256_storeu_ps(p0, _mm256_sub_ps(rounded(_mm256_mul_ps(x0, c)), rounded(_mm256_mul_ps(x1, s))));
  _mm256_storeu_ps(p1, _mm256_add_ps(rounded(_mm256_mul_ps(x0, s)), rounded(_mm256_mul_ps(x1, c))));
}

}  // namespace

// NeoX pairs (i, i + half) are 8 lanes apart in two loads; interleaved pairs (2i, 2i + 1)
// are 4 per vector: x cos + swap(x) (-sin, sin), with cos and sin spread to both lanes of
// their pair (x1 (-sin) + ... is -(x1 sin) exactly, and the adds are the reference's up to
// order of two terms).
void rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rot_dim, const float* cos,
          const float* sin, bool neox) {
  const int64_t half = rot_dim / 2;
  const __m256i spread = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  const __m256 negate_even = _mm256_setr_ps(-0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f, -0.0f, 0.0f);
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int64_t i = 0;
    if (neox) {
      for (; i + 8 <= half; i += 8) rotate8(v + i, v + half + i, cos + i, sin + i);
    } else {
      for (; i + 4 <= half; i += 4) {
        const __m256 xv = _mm256_loadu_ps(v + 2 * i);
        const __m256 c =
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), spread);
        const __m256 s = _mm256_xor_ps(
            _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), spread),
            negate_even);
        const __m256 swapped = _mm256_permute_ps(xv, _MM_SHUFFLE(2, 3, 0, 1));
        _mm256_storeu_ps(v + 2 * i, _mm256_add_ps(rounded(_mm256_mul_ps(xv, c)),
                                                  rounded(_mm256_mul_ps(swapped, s))));
      }
    }
    for (; i < half; ++i) {
      const int64_t a = neox ? i : 2 * i;
      const int64_t b = neox ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = rounded(x0 * cos[i]) - rounded(x1 * sin[i]);
      v[b] = rounded(x0 * sin[i]) + rounded(x1 * cos[i]);
    }
  }
}

void add(float* x, const float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) x[i] += y[i];
}

void scale(float* out, const float* in, float s, int64_t n) {
  const __m256 vs = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(in + i), vs));
  for (; i < n; ++i) out[i] = in[i] * s;
}

// Two passes instead of the reference's serial compare-and-keep (a loop-carried chain of
// ~4 cycles per element): the maximum of the non-NaN values in four independent vmaxps
// chains, then the first element equal to it. vmaxps returns its second operand when
// either is NaN, so a NaN element leaves the running maximum as it was; equality then
// finds the reference's first maximum, +0 and -0 included.
int64_t argmax(const float* x, int64_t n) {
  if (n <= 1 || std::isnan(x[0])) return 0;
  __m256 m[4];
  for (auto& v : m) v = _mm256_set1_ps(x[0]);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) m[k] = _mm256_max_ps(_mm256_loadu_ps(x + i + 8 * k), m[k]);
  }
  for (; i + 8 <= n; i += 8) m[0] = _mm256_max_ps(_mm256_loadu_ps(x + i), m[0]);
  __m256 v = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
  v = _mm256_max_ps(v, _mm256_permute2f128_ps(v, v, 1));
  v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm256_max_ps(v, _mm256_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  float top = _mm256_cvtss_f32(v);
  for (; i < n; ++i) top = x[i] > top ? x[i] : top;
  const __m256 target = _mm256_set1_ps(top);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const int hits = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + j), target, _CMP_EQ_OQ));
    if (hits != 0) return j + __builtin_ctz(static_cast<unsigned>(hits));
  }
  for (; j < n; ++j)
    if (x[j] == top) return j;
  return 0;  // not reached: top is one of the elements
}

}  // namespace strata::kernels::avx2
