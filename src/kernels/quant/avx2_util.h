// Small AVX2 helpers for the *_avx2.cpp files only.
//
// Everything here has internal linkage (static inline) on purpose: an inline function with
// external linkage compiled both here (with -mavx2) and in a baseline file could be merged
// by the linker into one AVX2 copy and crash CPUs without AVX2. For the same reason the
// AVX2 files do not call core/fp16.h; they convert halves with F16C instructions instead.
#pragma once

#ifndef __AVX2__
#error "avx2_util.h needs -mavx2 (files named *_avx2.cpp or *_avxvnni.cpp)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant/block_span.h"

// The namespace of the AVX2 kernels a file defines: avx2, or avx2vnni where an
// *_avxvnni.cpp file compiles the same source again with AVX-VNNI (kernels_avx2.h).
#ifndef STRATA_AVX2_NS
#define STRATA_AVX2_NS avx2
#endif

namespace strata::kernels::STRATA_AVX2_NS {

// `value` in byte b of the result where bit b of the 32 bits at p is set, 0 elsewhere (the
// high bits of Q3_K and Q5 quants, stored as bit masks).
static inline __m256i bit_bytes(const uint8_t* p, char value) {
  uint32_t bits;
  std::memcpy(&bits, p, 4);
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
  return _mm256_and_si256(set, _mm256_set1_epi8(value));
}

static inline float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

// a * b + c with one rounding. The builtin expands to vfmadd here (these files are built
// with -mfma); std::fma would be an external inline function (see above).
static inline float fma_ss(float a, float b, float c) {
  return __builtin_fmaf(a, b, c);
}

// ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)): a fixed order, part of the reduction
// contract that batch invariance relies on.
static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

static inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

static inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

static inline __m256 abs_ps(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

// Sum over pairs of signed int8 products: 8 lanes of int32, each the sum of 4 products.
// maddubs needs one unsigned operand, so the sign of x moves onto y. Saturation cannot
// occur: |x| <= 128 and |y| <= 127 give pairs of at most 2 * 128 * 127 < 32767.
static inline __m256i dot_i8(__m256i x, __m256i y) {
  const __m256i ax = _mm256_sign_epi8(x, x);
  const __m256i sy = _mm256_sign_epi8(y, x);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1));
}

// Packs 4 x 8 int32 lanes (each in int8 range) into 32 int8 in element order.
static inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 ...
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

static inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Shuffle mask that broadcasts int16 lane j of each 128-bit half to the whole half.
static inline __m256i broadcast_i16_mask(int j) {
  return _mm256_set1_epi16(static_cast<int16_t>(((2 * j + 1) << 8) | (2 * j)));
}

// Shuffle mask that broadcasts int16 lane j of the low half to the low half and lane j + 1
// of the high half to the high half.
static inline __m256i pair_i16_mask(int j) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((2 * j + 3) << 8) | (2 * j + 2))),
                          _mm_set1_epi16(static_cast<int16_t>(((2 * j + 1) << 8) | (2 * j))));
}

// The AVX2 row tiles' accumulators (acc[0]: lanes 0-7 of every group or super-block,
// acc[1]: lanes 8-15) at the start of a span: zero at the row's first group, else the
// carry the previous span left (2 x T x 8 floats, 32-byte aligned).
template <int T>
static inline void start_halves(const BlockSpan& span, __m256 (&acc)[2][T]) {
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t)
      acc[h][t] =
          span.begin == 0 ? _mm256_setzero_ps() : _mm256_load_ps(span.carry + (h * T + t) * 8);
  }
}

// At the end of a span: each token's sum into y after the row's last group (lanes i and
// i + 8 added, then hsum's tree), else the accumulators back into the carry.
template <int T>
static inline void finish_halves(const BlockSpan& span, const __m256 (&acc)[2][T], float* y,
                                 int64_t ldy) {
  if (span.end == span.n) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t * ldy] = hsum(_mm256_add_ps(acc[0][t], acc[1][t]));
    return;
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) _mm256_store_ps(span.carry + (h * T + t) * 8, acc[h][t]);
  }
}

}  // namespace strata::kernels::STRATA_AVX2_NS
