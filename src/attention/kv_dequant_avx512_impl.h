// The AVX-512 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h),
// shared by kv_dequant_avx512.cpp (bf16 rounding in integer arithmetic) and
// kv_dequant_avx512bf16.cpp (AVX512_BF16's conversion): the loops of kv_dequant_rows.h
// over two rows of 16 elements (values: slots 2m, 2m + 1) per step. Include only from
// files compiled for AVX-512.
#pragma once

#include <immintrin.h>

#include "attention/kv_dequant.h"
#include "attention/kv_dequant_rows.h"

// Internal linkage (an unnamed namespace): each including file, compiled for its own ISA,
// keeps its own copies.
namespace strata::attention::avx512_dequant {
namespace {  // NOLINT(google-build-namespaces)

inline __m512 load_q(const int8_t* p) {
  return _mm512_cvtepi32_ps(
      _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// 16 q4_0 elements from 8 bytes (low nibble first), as float q = nibble - 8: each byte in
// two lanes, the odd lane's shifted down 4 bits, then a 16-entry table of the floats
// -8..7 (vpermps reads only an index's low 4 bits). Masking, subtracting and converting
// the nibbles took 3 more operations per 16 elements.
inline __m512 unpack16(const uint8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m512i twice = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(b, b));  // b0 b0 b1 b1 ..
  const __m512i idx =
      _mm512_srlv_epi32(twice, _mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4, 0, 4));
  const __m512 table = _mm512_setr_ps(-8.0f, -7.0f, -6.0f, -5.0f, -4.0f, -3.0f, -2.0f, -1.0f, 0.0f,
                                      1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f);
  return _mm512_permutexvar_ps(idx, table);
}

template <DType T>
inline __m512 load16(const uint8_t* q, int64_t at) {  // elements at..at+15 as float
  if constexpr (T == DType::Q4_0) {
    return unpack16(q + at / 2);
  } else {
    return load_q(reinterpret_cast<const int8_t*>(q) + at);
  }
}
// The vector policy of kv_dequant_rows.h: 16 lanes; Pack::store(out, a, b) stores 16
// pairs (a[i], b[i]) rounded to bf16, a first, at out.
template <class Pack>
struct V {
  using vec = __m512;
  static constexpr int64_t kWidth = 16;
  template <DType T>
  static vec load(const uint8_t* q, int64_t at) {
    return load16<T>(q, at);
  }
  static vec splat_scale(uint16_t h) { return _mm512_set1_ps(_cvtsh_ss(h)); }
  static vec mul(vec a, vec b) { return _mm512_mul_ps(a, b); }
  static vec zero() { return _mm512_setzero_ps(); }
  static void store(uint16_t* out, vec a, vec b) { Pack::store(out, a, b); }
};

template <DType T, class Pack>
void dequant(const uint8_t* q, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  kv_rows::dequant<T, V<Pack>>(q, keys, bs, hd, out);
}

}  // namespace
}  // namespace strata::attention::avx512_dequant
