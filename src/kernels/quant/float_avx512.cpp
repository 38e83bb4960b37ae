// AVX-512 dot products for the plain float weight types (F32, F16, BF16), in exactly the
// order of the AVX2 kernels (float_avx2.cpp) so that both levels give the same bits:
// register A holds the AVX2 kernel's accumulators 0 and 1 (lanes 0-7 and 8-15) and B its
// accumulators 2 and 3, so every lane takes the same fmas in the same order; 8-element
// steps go to lanes 0-7 of A (accumulator 0), and the end is the AVX2 kernel's: (a0 + a1) +
// (a2 + a3), hsum, then the last n % 8 elements one by one. Half the instructions of the
// AVX2 loop: decode's F16 classifier (llama-1b Q8_0) streamed at 55 GB/s against 65-68 for
// the matmuls around it.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "core/fp16.h"
#include "core/prefetch.h"
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/kernels_avx512.h"

namespace strata::kernels::avx512 {
namespace {

using avx2::fma_ss;
using avx2::hsum;

constexpr __mmask16 kLow8 = 0x00ff;

struct LoadF32 {
  using W = float;
  static __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 load8(const float* p) { return _mm512_maskz_loadu_ps(kLow8, p); }
  static float load1(float v) { return v; }
};

struct LoadF16 {
  using W = uint16_t;
  static __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load8(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(kLow8, p));
  }
  static float load1(uint16_t h) { return avx2::half_to_float(h); }
};

struct LoadBF16 {
  using W = uint16_t;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load16(const uint16_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load8(const uint16_t* p) { return widen(_mm256_maskz_loadu_epi16(kLow8, p)); }
  static float load1(uint16_t h) { return bf16_to_fp32(h); }
};

// One weight row against T activation rows; the weight vectors are loaded and widened
// once for all T tokens.
template <int T, class L>
void dot_tile(int64_t n, const typename L::W* w, const float* a, int64_t a_stride, float* y,
              int64_t ldy) {
  __m512 acc01[T], acc23[T];
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) acc01[t] = acc23[t] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 w0 = L::load16(w + i), w1 = L::load16(w + i + 16);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      const float* at = a + t * a_stride + i;
      acc01[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(at), acc01[t]);
      acc23[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(at + 16), acc23[t]);
    }
  }
  for (; i + 8 <= n; i += 8) {
    const __m512 w0 = L::load8(w + i);
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) {
      acc01[t] = _mm512_mask3_fmadd_ps(w0, _mm512_maskz_loadu_ps(kLow8, a + t * a_stride + i),
                                       acc01[t], kLow8);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t) {
    const float* at = a + t * a_stride;
    const __m256 a01 =
        _mm256_add_ps(_mm512_castps512_ps256(acc01[t]), _mm512_extractf32x8_ps(acc01[t], 1));
    const __m256 a23 =
        _mm256_add_ps(_mm512_castps512_ps256(acc23[t]), _mm512_extractf32x8_ps(acc23[t], 1));
    float sum = hsum(_mm256_add_ps(a01, a23));
    for (int64_t j = i; j < n; ++j) sum = fma_ss(L::load1(w[j]), at[j], sum);
    y[t * ldy] = sum;
  }
}

template <class L>
float dot(int64_t n, const void* w, const void* a) {
  float y = 0.0f;
  dot_tile<1, L>(n, static_cast<const typename L::W*>(w), static_cast<const float*>(a), 0, &y, 0);
  return y;
}

// Tokens in groups of 4 (8 accumulators), every row of the panel per group.
template <class L>
void gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a, int64_t a_stride,
          int64_t nt, float* y, int64_t ldy) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const float*>(a);
  const int64_t as = a_stride / static_cast<int64_t>(sizeof(float));
  auto rows = [&]<int T>(const float* at, float* yt) {
    for (int64_t r = 0; r < nr; ++r) {
      prefetch_page_ahead(wp + r * w_stride, static_cast<size_t>(w_stride));
      dot_tile<T, L>(n, reinterpret_cast<const typename L::W*>(wp + r * w_stride), at, as, yt + r,
                     ldy);
    }
  };
  int64_t t = 0;
  for (; t + 4 <= nt; t += 4) rows.template operator()<4>(ap + t * as, y + t * ldy);
  switch (nt - t) {
    case 3:
      rows.template operator()<3>(ap + t * as, y + t * ldy);
      break;
    case 2:
      rows.template operator()<2>(ap + t * as, y + t * ldy);
      break;
    case 1:
      rows.template operator()<1>(ap + t * as, y + t * ldy);
      break;
    default:
      break;
  }
}

}  // namespace

float f32_vec_dot(int64_t n, const void* w, const void* a) {
  return dot<LoadF32>(n, w, a);
}
float f16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot<LoadF16>(n, w, a);
}
float bf16_vec_dot(int64_t n, const void* w, const void* a) {
  return dot<LoadBF16>(n, w, a);
}

void f32_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm<LoadF32>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void f16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
              int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm<LoadF16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}
void bf16_gemm(int64_t n, const void* w, int64_t w_stride, int64_t nr, const void* a,
               int64_t a_stride, int64_t nt, float* y, int64_t ldy) {
  gemm<LoadBF16>(n, w, w_stride, nr, a, a_stride, nt, y, ldy);
}

}  // namespace strata::kernels::avx512
