// avx512 dequantization of q8_0 and q4_0 KV tiles into bf16 tiles (see kv_dequant.h and
// kv_dequant_avx512_impl.h), rounding with AVX512_BF16's vcvtne2ps2bf16: round to nearest
// even, NaN kept NaN with its quiet bit set, as fp32_to_bf16 (it treats subnormal inputs
// as zero, but q * scale with an f16 scale is never an f32 subnormal: |q| >= 1 and the
// smallest f16 scale is 2^-24). A word permute interleaves the two rows into pairs.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "attention/kv_dequant_avx512_impl.h"

namespace strata::attention::avx512bf16 {
namespace {

struct Pack {
  static void store(uint16_t* out, __m512 a, __m512 b) {
    // cvtne2ps gives a's 16 values, then b's; word 2i takes a[i], word 2i + 1 b[i].
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i x = (__m512i)_mm512_cvtne2ps_pbh(b, a);
    _mm512_storeu_si512(out, _mm512_permutexvar_epi16(idx, x));
  }
};

}  // namespace

void dequant_q8_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  avx512_dequant::dequant<DType::Q8_0, Pack>(tile, keys, bs, hd, out);
}
void dequant_q4_0(const uint8_t* tile, bool keys, int64_t bs, int64_t hd, uint16_t* out) {
  avx512_dequant::dequant<DType::Q4_0, Pack>(tile, keys, bs, hd, out);
}

}  // namespace strata::attention::avx512bf16
