// avx2 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h): the
// loops of kv_dequant_rows.h over two rows of 8 elements (values: slots 2m, 2m + 1) per
// step.
#include <immintrin.h>

#include <cstring>

#include "attention/kv_dequant.h"
#include "attention/kv_dequant_rows.h"

namespace strata::attention::avx2 {
namespace {

// fp32_to_bf16 of 8 floats, the result in the high half of each lane.
inline __m256i bf16_high(__m256 x) {
  const __m256i b = _mm256_castps_si256(x);
  const __m256i r = _mm256_add_epi32(
      b, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                          _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1))));
  // Both sides are non-negative as int32, so the signed compare is the unsigned one.
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  return _mm256_blendv_epi8(r, _mm256_or_si256(b, _mm256_set1_epi32(0x00400000)), nan);
}
// The vector policy of kv_dequant_rows.h: 8 lanes.
struct V {
  using vec = __m256;
  static constexpr int64_t kWidth = 8;
  template <DType T>
  static vec load(const uint8_t* q, int64_t at) {  // elements at..at+7 as float (at even)
    __m128i x;
    if constexpr (T == DType::Q4_0) {
      int32_t w;
      std::memcpy(&w, q + at / 2, sizeof w);
      const __m128i b = _mm_cvtsi32_si128(w);
      const __m128i m = _mm_set1_epi8(0x0F);
      const __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
      x = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), _mm_set1_epi8(8));
    } else {
      x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + at));
    }
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(x));
  }
  static vec splat_scale(uint16_t h) { return _mm256_set1_ps(_cvtsh_ss(h)); }
  static vec mul(vec a, vec b) { return _mm256_mul_ps(a, b); }
  static vec zero() { return _mm256_setzero_ps(); }
  // 8 pairs (a[i], b[i]) as bf16, a in the low half, stored at out (16 elements).
  static void store(uint16_t* out, vec a, vec b) {
    const __m256i lo = _mm256_srli_epi32(bf16_high(a), 16);
    const __m256i hi =
        _mm256_and_si256(bf16_high(b), _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_or_si256(lo, hi));
  }
};

}  // namespace

void dequant_q8_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  kv_rows::dequant<DType::Q8_0, V>(tile, keys, bs, hd, out);
}
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  kv_rows::dequant<DType::Q4_0, V>(tile, keys, bs, hd, out);
}

}  // namespace strata::attention::avx2
