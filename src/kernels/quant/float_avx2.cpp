// AVX2/FMA/F16C kernels for the plain float types. Conversions are bit-identical to the
// scalar ones in float_ref.cpp (including NaN, which both turn into a quiet NaN with
// the input's sign: 0x7e00 for halves, the truncated bits | 0x40 for bfloat16).
//
// Dot products: 4 accumulators of 8 lanes; element i goes to accumulator (i / 8) % 4 while
// 32-element steps remain, then 8-element steps go to accumulator 0, the accumulators are
// combined as (a0 + a1) + (a2 + a3), reduced with hsum(), and the last n % 8 elements are
// added one by one with fma. The gemm kernels run the same template with several tokens per
// weight row, so their outputs are bit-identical to vec_dot's.
#include "core/prefetch.h"
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

// One weight row against T activation rows, each with its own four accumulators in the
// order above; the weight vectors are loaded and widened once for all T tokens. With T = 1
// this is the vec_dot, so gemm outputs are bit-identical to vec_dot's.
template <int T, class Load8, class Load1, class W>
void dot_widened_tile(int64_t n, const W* w, const float* a, int64_t a_stride, float* y,
                      int64_t ldy, Load8 load8, Load1 load1) {
  __m256 acc[T][4];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < 4; ++k) acc[t][k] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 w0 = load8(w + i), w1 = load8(w + i + 8), w2 = load8(w + i + 16),
                 w3 = load8(w + i + 24);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const float* at = a + t * a_stride + i;
      acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(at), acc[t][0]);
      acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(at + 8), acc[t][1]);
      acc[t][2] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(at + 16), acc[t][2]);
      acc[t][3] = _mm256_fmadd_ps(w3, _mm256_loadu_ps(at + 24), acc[t][3]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 w0 = load8(w + i);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(a + t * a_stride + i), acc[t][0]);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    const float* at = a + t * a_stride;
    float sum = hsum(
        _mm256_add_ps(_mm256_add_ps(acc[t][0], acc[t][1]), _mm256_add_ps(acc[t][2], acc[t][3])));
    for (int64_t j = i; j < n; ++j) sum = fma_ss(load1(w[j]), at[j], sum);
    y[t * ldy] = sum;
  }
}

template <class Load8, class Load1, class W>
float dot_widened(int64_t n, const W* w, const float* a, Load8 load8, Load1 load1) {
  float y = 0.0f;
  dot_widened_tile<1>(n, w, a, 0, &y, 0, load8, load1);
  return y;
}

// Tokens in groups of 3 (12 accumulators), every row of the panel per group.
template <class W, class Load8, class Load1>
void gemm_widened(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
                  int64_t a_stride, int64_t nt, float* y, int64_t ldy, Load8 load8, Load1 load1) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const float*>(a);
  const int64_t as = a_stride / static_cast<int64_t>(sizeof(float));
  auto rows = [&]<int T>(const float* at, float* yt) {
    for (int64_t r = 0; r < nr; ++r) {
      prefetch_page_ahead(wp + r * w_stride, static_cast<size_t>(w_stride));
      dot_widened_tile<T>(n, reinterpret_cast<const W*>(wp + r * w_stride), at, as, yt + r, ldy,
                          load8, load1);
    }
  };
  int64_t t = 0;
  for (; t + 3 <= nt; t += 3) rows.template operator()<3>(ap + t * as, y + t * ldy);
  if (nt - t == 2) rows.template operator()<2>(ap + t * as, y + t * ldy);
  if (nt - t == 1) rows.template operator()<1>(ap + t * as, y + t * ldy);
}

const auto kLoadF32 = [](const float* p) { return _mm256_loadu_ps(p); };
const auto kLoadF32x1 = [](float v) { return v; };
const auto kLoadF16 = [](const uint16_t* p) { return load_f16x8(p); };
const auto kLoadF16x1 = [](uint16_t h) { return half_to_float(h); };
const auto kLoadBF16 = [](const uint16_t* p) { return load_bf16x8(p); };
const auto kLoadBF16x1 = [](uint16_t h) { return bf16_scalar(h); };

}  // namespace

float f32_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(n, static_cast<const float*>(w), static_cast<const float*>(a), kLoadF32,
                     kLoadF32x1);
}

float f16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(n, static_cast<const uint16_t*>(w), static_cast<const float*>(a), kLoadF16,
                     kLoadF16x1);
}

float bf16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_widened(n, static_cast<const uint16_t*>(w), static_cast<const float*>(a), kLoadBF16,
                     kLoadBF16x1);
}

void f32_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_widened<float>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, kLoadF32, kLoadF32x1);
}

void f16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_widened<uint16_t>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, kLoadF16, kLoadF16x1);
}

void bf16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm_widened<uint16_t>(n, w, w_stride, nr, a, a_stride, nt, y, ldy, kLoadBF16, kLoadBF16x1);
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
