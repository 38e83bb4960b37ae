// avx512 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h and
// kv_dequant_avx512_impl.h), rounding to bf16 in integer arithmetic (CPUs without
// AVX512_BF16).
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "attention/kv_dequant_avx512_impl.h"

namespace strata::attention::avx512 {
namespace {

// fp32_to_bf16 of 16 floats, the result in the high half of each lane (the low half is
// rounding residue).
inline __m512i bf16_high(__m512 x) {
  const __m512i b = _mm512_castps_si512(x);
  const __m512i one = _mm512_set1_epi32(1);
  const __m512i r = _mm512_add_epi32(
      b,
      _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(b, 16), one)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(b, _mm512_set1_epi32(0x00400000)));
}
// 16 pairs (a[i], b[i]) as bf16, a in the low half, stored at out (32 elements).
struct Pack {
  static void store(uint16_t* out, __m512 a, __m512 b) {
    const __m512i lo = _mm512_srli_epi32(bf16_high(a), 16);
    const __m512i hi =
        _mm512_and_si512(bf16_high(b), _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
    _mm512_storeu_si512(out, _mm512_or_si512(lo, hi));
  }
};

}  // namespace

void dequant_q8_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  avx512_dequant::dequant<DType::Q8_0, Pack>(tile, keys, bs, hd, out);
}
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  avx512_dequant::dequant<DType::Q4_0, Pack>(tile, keys, bs, hd, out);
}

}  // namespace strata::attention::avx512
