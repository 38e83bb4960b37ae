// AVX2+FMA tile fold (see tile_kernels.h and fold_simd.h): 8 keys per register.
#include <immintrin.h>

#include "attention/fold_quant_keys.h"
#include "attention/fold_simd.h"
#include "attention/tile_kernels.h"
#include "kernels/cpu/simd_avx2.h"

namespace strata::attention::avx2 {
namespace {

// The arithmetic comes from kernels::simd::Avx2Float; this adds masks, loads, stores and
// the horizontal reductions the fold needs.
struct Avx2Vec : kernels::simd::Avx2Float {
  static constexpr int64_t W = 8;
  // Score passes of 2 rows x 4 key columns (8 accumulators, 4 key vectors, the broadcast
  // query element) and value passes of 4 rows x 2 vectors (8 accumulators). The value
  // pass had the AVX-512 shape (4 x 4: 16 accumulators), and GCC kept 4 of them on the
  // stack, a store and a reload per key. Broadcasts set the score pass's pace (a
  // standalone loop: 2 x 4 ran 94-96 GFLOP/s, 4 x 2 47-49, one Zen 4 thread), so it keeps
  // few rows and many columns. attention_fold_bench, one thread, against 2 x 4 scores
  // with masked loads and 4 x 4 values: f16 tiles rows:8 46 -> 69 GFLOP/s, rows:128 58 ->
  // 76; f32 rows:8 53 -> 57-72.
  static constexpr int kScoreRows = 2;
  static constexpr int kScoreCols = 4;
  static constexpr int kAccRows = 4;
  static constexpr int kAccCols = 2;
  // f16 tiles are widened to float once per fold from this many rows (fold_simd.h fold),
  // not for a decode fold's 8: converting the full columns as they load measured faster
  // (f16 rows:8 with 2 x 4 score passes: 69 GFLOP/s against 51 widened) although each key
  // is converted once per score pass.
  static constexpr int kWidenF16Rows = 9;
  using Mask = __m256i;  // all-ones lanes are in
  static Mask first(int64_t n) {
    const int32_t k = static_cast<int32_t>(std::clamp<int64_t>(n, 0, W));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F zero() { return _mm256_setzero_ps(); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F maskz_load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static F load_elems(const float* p, Mask m, int64_t) { return _mm256_maskload_ps(p, m); }
  static F load_elems(const uint16_t* p, Mask, int64_t n_valid) {
    if (n_valid >= W) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    alignas(16) uint16_t h[W] = {};  // AVX2 has no masked 16-bit load: copy the valid lanes
    for (int64_t i = 0; i < n_valid; ++i) h[i] = p[i];
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h)));
  }
  static F load_or_neg_inf(const float* p, Mask m) {
    return _mm256_blendv_ps(_mm256_set1_ps(-__builtin_inff()), _mm256_loadu_ps(p),
                            _mm256_castsi256_ps(m));
  }
  static void store(float* p, F x) { _mm256_storeu_ps(p, x); }
  static void mask_store(float* p, Mask m, F x) { _mm256_maskstore_ps(p, m, x); }
  static F zero_outside(F x, Mask m) { return _mm256_and_ps(x, _mm256_castsi256_ps(m)); }
  static float first_lane(F x) { return _mm256_cvtss_f32(x); }
  // W pairs of bf16 values at p: the first and the second of each pair, as float.
  static void load_bf16_pairs(const uint16_t* p, F& first, F& second) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    first = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    second = _mm256_castsi256_ps(
        _mm256_and_si256(x, _mm256_set1_epi32(static_cast<int32_t>(0xffff0000u))));
  }
  // To the nearest bf16 value, ties to even, as float; NaN stays NaN.
  static F round_bf16(F x) {
    const __m256i i = _mm256_castps_si256(x);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(i, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_add_epi32(i, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd));
    const F rounded = _mm256_castsi256_ps(
        _mm256_and_si256(r, _mm256_set1_epi32(static_cast<int32_t>(0xffff0000u))));
    return _mm256_blendv_ps(rounded, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  }
  static float reduce_max(F v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static float reduce_add(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }

  // For fold_simd.h's batched softmax: lane r of the result is op folded over the lanes of
  // v[r], pairing lanes as reduce_add does (i with i + 4, then i + 2, then i + 1), so every
  // row gets the bits reduce_add / reduce_max would give it alone. Three levels of
  // shuffle-and-op halve the vectors while doubling the rows each one holds; the last leaves
  // row r in lane 4 * (r % 2) + r / 2, which one permute undoes.
  template <class Op>
  static F transpose_reduce(F (&v)[8], Op op) {
    F w[4], x[2];
    for (int k = 0; k < 4; ++k) {  // row 2k in lanes 0-3, 2k+1 in 4-7: lane i op i + 4
      w[k] = op(_mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x20),
                _mm256_permute2f128_ps(v[2 * k], v[2 * k + 1], 0x31));
    }
    for (int k = 0; k < 2; ++k) {  // half h: lanes 0-1 row 4k + h, 2-3 row 4k + 2 + h: i op i + 2
      x[k] = op(_mm256_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                _mm256_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    }
    const F r = op(_mm256_shuffle_ps(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0)),  // i op i + 1
                   _mm256_shuffle_ps(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  }
  static F broadcast_lane(F v, int i) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i)); }

  // For fold_quant_keys.h: AVX2 has no byte dot product that cannot saturate, so each
  // lane's key bytes are widened to 16 bits (bytes 0 and 2, bytes 1 and 3) and multiplied
  // by vpmaddwd, which sums pairs of products exactly; q8_0 keys signed as stored, q4_0 keys
  // as their nibbles k + 8.
  static constexpr int kQuantScoreRows = 4;  // x 2 columns: 8 chains and 4 key registers
  static constexpr int32_t kQ8KeyOffset = 0;
  using I = __m256i;
  struct Quads {
    __m256i even, odd;
  };
  static I iset1(int32_t x) { return _mm256_set1_epi32(x); }
  static Quads load_q8_quads(const int8_t* p, Mask m, int64_t) {
    const __m256i x = _mm256_maskload_epi32(reinterpret_cast<const int*>(p), m);
    return {_mm256_srai_epi16(_mm256_slli_epi16(x, 8), 8), _mm256_srai_epi16(x, 8)};
  }
  // 8 keys x 2 bytes: byte 2i holds dimensions 4m, 4m+1 of key i, byte 2i+1 4m+2, 4m+3.
  static Quads load_q4_quads(const uint8_t* p, Mask, int64_t n_valid) {
    __m128i b;
    if (n_valid >= W) {
      b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    } else {
      alignas(16) uint8_t tmp[16] = {};  // AVX2 has no masked byte load: copy the valid keys
      for (int64_t i = 0; i < 2 * n_valid; ++i) tmp[i] = p[i];
      b = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
    }
    const __m256i x = _mm256_cvtepu8_epi16(b), low = _mm256_set1_epi16(0x0f);
    return {_mm256_and_si256(x, low), _mm256_and_si256(_mm256_srli_epi16(x, 4), low)};
  }
  static I dot4(I acc, const Quads& k, int32_t q4) {
    auto pair = [](int32_t lo, int32_t hi) {  // two signed bytes as 16-bit words
      return static_cast<int32_t>(
          static_cast<uint16_t>(static_cast<int8_t>(lo)) |
          static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int8_t>(hi))) << 16);
    };
    const __m256i even = _mm256_madd_epi16(k.even, _mm256_set1_epi32(pair(q4, q4 >> 16)));
    const __m256i odd = _mm256_madd_epi16(k.odd, _mm256_set1_epi32(pair(q4 >> 8, q4 >> 24)));
    return _mm256_add_epi32(acc, _mm256_add_epi32(even, odd));
  }
  static F to_float(I x) { return _mm256_cvtepi32_ps(x); }
};

}  // namespace

void fold(const FoldTile& tile) {
  if (tile.elem == TileElem::q8_keys || tile.elem == TileElem::q4_keys)
    return simd::fold_quant_keys_widened<Avx2Vec>(tile);
  simd::fold<Avx2Vec>(tile);
}

}  // namespace strata::attention::avx2
