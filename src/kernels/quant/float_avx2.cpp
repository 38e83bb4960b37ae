// AVX2/FMA/F16C kernels for the plain float types. Conversions are bit-identical to the
// scalar ones in float_ref.cpp (including NaN, which both turn into a quiet NaN with
// the input's sign: 0x7e00 for halves, the truncated bits | 0x40 for bfloat16).
//
// Dot products: 4 accumulators of 8 lanes; element i goes to accumulator (i / 8) % 4 while
// 32-element steps remain, then 8-element steps go to accumulator 0, the accumulators are
// combined as (a0 + a1) + (a2 + a3), reduced with hsum(), and the last n % 8 elements are
// added one by one with fma. A register-blocked GEMM that wants to stay bit-identical to
// matmul's per-row path must reproduce this order.
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/kernels_avx2.h"

namespace strata::kernels::avx2 {
namespace {

inline __m256 load_f16x8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 load_bf16x8(const uint16_t* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

inline float bf16_scalar(uint16_t h) {
  return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(h) << 16)));
}

template <class Load8, class Load1, class T>
float dot_widened(int64_t n, const T* w, const float* a, Load8 load8, Load1 load1) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(a + i), acc0);
    acc1 = _mm256_fmadd_ps(load8(w + i + 8), _mm256_loadu_ps(a + i + 8), acc1);
    acc2 = _mm256_fmadd_ps(load8(w + i + 16), _mm256_loadu_ps(a + i + 16), acc2);
    acc3 = _mm256_fmadd_ps(load8(w + i + 24), _mm256_loadu_ps(a + i + 24), acc3);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(load8(w + i), _mm256_loadu_ps(a + i), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; i < n; ++i) sum = fma_ss(load1(w[i]), a[i], sum);
  return sum;
}

}  // namespace

float f32_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(
      n, static_cast<const float*>(w), static_cast<const float*>(a),
      [](const float* p) { return _mm256_loadu_ps(p); }, [](float v) { return v; });
}

float f16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(
      n, static_cast<const uint16_t*>(w), static_cast<const float*>(a),
      [](const uint16_t* p) { return load_f16x8(p); }, [](uint16_t h) { return half_to_float(h); });
}

float bf16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(
      n, static_cast<const uint16_t*>(w), static_cast<const float*>(a),
      [](const uint16_t* p) { return load_bf16x8(p); }, [](uint16_t h) { return bf16_scalar(h); });
}

void f16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_f16x8(h + i));
  for (; i < n; ++i) dst[i] = half_to_float(h[i]);
}

namespace {

// F16C rounds to nearest even like fp32_to_fp16 but keeps NaN payload bits; rewrite NaNs
// to the canonical quiet NaN the scalar conversion produces.
inline __m128i float_to_half_x8(__m256 v) {
  const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i nan32 = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m128i nan16 =
      _mm_packs_epi32(_mm256_castsi256_si128(nan32), _mm256_extracti128_si256(nan32, 1));
  const __m128i canonical = _mm_or_si128(
      _mm_and_si128(h, _mm_set1_epi16(static_cast<int16_t>(0x8000))), _mm_set1_epi16(0x7e00));
  return _mm_blendv_epi8(h, canonical, nan16);
}

// Round to nearest even on the upper 16 bits; NaN keeps its upper bits with the quiet bit set.
inline __m128i float_to_bf16_x8(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f800000));
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(64));
  const __m256i r = _mm256_blendv_epi8(rounded, nan, is_nan);
  const __m256i packed = _mm256_packus_epi32(r, r);  // r0-3 r0-3 | r4-7 r4-7
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}

inline uint16_t first_lane(__m128i v) {
  return static_cast<uint16_t>(_mm_extract_epi16(v, 0));
}

}  // namespace

void f16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), float_to_half_x8(_mm256_loadu_ps(src + i)));
  }
  for (; i < n; ++i) h[i] = first_lane(float_to_half_x8(_mm256_set1_ps(src[i])));
}

void bf16_to_float(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_bf16x8(h + i));
  for (; i < n; ++i) dst[i] = bf16_scalar(h[i]);
}

void bf16_from_float(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), float_to_bf16_x8(_mm256_loadu_ps(src + i)));
  }
  for (; i < n; ++i) h[i] = first_lane(float_to_bf16_x8(_mm256_set1_ps(src[i])));
}

}  // namespace strata::kernels::avx2
