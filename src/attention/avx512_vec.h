// The AVX-512 vector type of the attention folds (fold_simd.h), shared by the AVX-512 and
// AVX-512 BF16 translation units, which alone include it (it needs their compile flags).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace strata::attention::simd {
// Internal linkage: each including file is compiled with its own ISA flags, so each gets
// its own copies of the templates instantiated over this type (no ODR mixing).
namespace {

struct Avx512Vec {
  static constexpr int64_t W = 16;
  static constexpr int kScoreRows = 6;      // 24 of the 32 registers hold scores
  static constexpr int kScoreCols = 4;      // key columns (of W keys) per score pass
  static constexpr int kAccRows = 4;        // rows per value pass: 16 accumulators
  static constexpr int kAccCols = 4;        // vectors per row in a value pass
  static constexpr int kWidenF16Rows = 16;  // f16 tiles widened once per fold from 16 rows
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
  // W pairs of bf16 values at p: the first and the second of each pair, as float.
  static void load_bf16_pairs(const uint16_t* p, F& first, F& second) {
    const __m512i x = _mm512_loadu_si512(p);
    first = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    second = _mm512_castsi512_ps(
        _mm512_and_si512(x, _mm512_set1_epi32(static_cast<int32_t>(0xffff0000u))));
  }
  // To the nearest bf16 value, ties to even, as float; NaN stays NaN.
  static F round_bf16(F x) {
    const __m512i i = _mm512_castps_si512(x);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(i, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_add_epi32(i, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd));
    const F rounded = _mm512_castsi512_ps(
        _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int32_t>(0xffff0000u))));
    return _mm512_mask_mov_ps(rounded, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
  }
  static float reduce_max(F v) { return _mm512_reduce_max_ps(v); }
  static float reduce_add(F v) { return _mm512_reduce_add_ps(v); }
  static F round_nearest(F x) {
    return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static F times_pow2(F y, F n) { return _mm512_scalef_ps(y, n); }

  // For fold_simd.h's 16-row softmax: lane r of the result is op folded over the lanes of
  // v[r], pairing lanes as _mm512_reduce_add_ps does (i with i + 8, then i + 4, i + 2,
  // i + 1), so every row gets the bits reduce_add / reduce_max would give it alone. Four
  // levels of shuffle-and-op halve the vectors while doubling the rows each one holds;
  // the last leaves row r in lane 4 * (r % 4) + r / 4, which one permute undoes.
  template <class Op>
  static F transpose_reduce(F (&v)[16], Op op) {
    F w[8], x[4], z[2];
    for (int k = 0; k < 8; ++k) {  // row 2k in lanes 0-7, 2k+1 in 8-15: lane i op i + 8
      w[k] = op(_mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                _mm512_shuffle_f32x4(v[2 * k], v[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    for (int k = 0; k < 4; ++k) {  // 128-bit chunk j holds row 4k + j: i op i + 4
      x[k] = op(_mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                _mm512_shuffle_f32x4(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    }
    for (int k = 0; k < 2; ++k) {  // chunk j: lanes 0-1 row 8k + j, 2-3 row 8k + 4 + j: i op i + 2
      z[k] = op(_mm512_shuffle_ps(x[2 * k], x[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                _mm512_shuffle_ps(x[2 * k], x[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    const F r = op(_mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)),  // i op i + 1
                   _mm512_shuffle_ps(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_permutexvar_ps(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), r);
  }
  static F broadcast_lane(F v, int i) { return _mm512_permutexvar_ps(_mm512_set1_epi32(i), v); }

  // For fold_quant_keys.h: vpdpbusd multiplies unsigned by signed bytes, so q8_0 keys are
  // read as k + 128 (the sign bit flipped) and q4_0 keys as their nibbles k + 8.
  static constexpr int kQuantScoreRows = 8;  // x 2 columns: 16 chains for vpdpbusd's latency
  static constexpr int32_t kQ8KeyOffset = 128;
  using I = __m512i;
  using Quads = __m512i;
  static I iset1(int32_t x) { return _mm512_set1_epi32(x); }
  static Quads load_q8_quads(const int8_t* p, Mask m, int64_t) {
    return _mm512_xor_si512(_mm512_maskz_loadu_epi32(m, p), _mm512_set1_epi8(-128));
  }
  // 16 keys x 2 bytes (nibbles of dimensions 4m, 4m+1 | 4m+2, 4m+3, low first) to a byte
  // per nibble: the bytes widened to 16 bits, then each lane's (x | x << 4) & 0x0f0f0f0f.
  static Quads load_q4_quads(const uint8_t* p, Mask m, int64_t) {
    const __m512i x = _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_ternarylogic_epi32(x, _mm512_slli_epi32(x, 4), _mm512_set1_epi8(0x0f), 0xA8);
  }
  static I dot4(I acc, Quads k, int32_t q4) {
    return _mm512_dpbusd_epi32(acc, k, _mm512_set1_epi32(q4));
  }
  static F to_float(I x) { return _mm512_cvtepi32_ps(x); }
};

}  // namespace
}  // namespace strata::attention::simd
