// AVX2 kernels for Q8_0 and Q4_0 weights against Q8_0 activations, and the AVX2 Q8_0
// quantizer (bit-identical to ref::q8_0_from_float).
//
// Dot-product reduction order: each block's 32 products are summed exactly in int32 (8 lanes),
// converted to float and multiplied-added by d_w * d_a into one of two 8-lane accumulators
// (even blocks -> acc0, odd blocks -> acc1, an odd last block -> acc0); the result is
// hsum(acc0 + acc1).
#include "kernels/quant/avx2_util.h"
#include "kernels/quant/blocks.h"
#include "kernels/quant/kernels_avx2.h"

namespace strata::kernels::avx2 {
namespace {

// Unsigned nibbles of a Q4_0 block in element order (low nibbles, then high nibbles).
inline __m256i load_q4_0_nibbles(const BlockQ4_0& block) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
  const __m256i both =
      _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// sum((q - 8) * a) as 8 int32 lanes: maddubs takes the unsigned nibbles directly, and
// maddubs(8, a) removes the offset; both int16 pair sums stay within 2 * 15 * 127.
inline __m256i dot_q4_0(__m256i nibbles, __m256i a) {
  const __m256i qa = _mm256_maddubs_epi16(nibbles, a);
  const __m256i offset = _mm256_maddubs_epi16(_mm256_set1_epi8(8), a);
  return _mm256_madd_epi16(_mm256_sub_epi16(qa, offset), _mm256_set1_epi16(1));
}

inline __m256i load_q8_0(const BlockQ8_0& block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs));
}

template <class WBlock, class DotBlock>
float dot_blocks(int64_t n, const void* w, const void* a, DotBlock dot_block) {
  const WBlock* wb = static_cast<const WBlock*>(w);
  const BlockQ8_0* ab = static_cast<const BlockQ8_0*>(a);
  const int64_t nb = n / kQK8_0;
  auto step = [&](int64_t b, __m256 acc) {
    const float d = half_to_float(wb[b].d) * half_to_float(ab[b].d);
    const __m256i sums = dot_block(wb[b], load_q8_0(ab[b]));
    return _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sums), acc);
  };
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    acc0 = step(b, acc0);
    acc1 = step(b + 1, acc1);
  }
  if (b < nb) acc0 = step(b, acc0);
  return hsum(_mm256_add_ps(acc0, acc1));
}

// roundf() semantics (ties away from zero) after clamping to [-limit, limit], exactly as
// round_away_clamped() in rounding.h: min/max return the constant for NaN, the fraction
// v - trunc(v) is exact, and +-1 is added when it reaches one half.
inline __m256 round_away_clamped(__m256 v, float limit) {
  v = _mm256_min_ps(v, _mm256_set1_ps(limit));
  v = _mm256_max_ps(v, _mm256_set1_ps(-limit));
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_sub_ps(v, t);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
  const __m256 down = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(-0.5f), _CMP_LE_OQ), one);
  return _mm256_sub_ps(_mm256_add_ps(t, up), down);
}

}  // namespace

float q8_0_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_blocks<BlockQ8_0>(
      n, w, a, [](const BlockQ8_0& wq, __m256i aq) { return dot_i8(load_q8_0(wq), aq); });
}

float q4_0_vec_dot(int64_t n, const void* w, const void* a) {
  return dot_blocks<BlockQ4_0>(
      n, w, a, [](const BlockQ4_0& wq, __m256i aq) { return dot_q4_0(load_q4_0_nibbles(wq), aq); });
}

void q8_0_from_float(const float* src, void* dst, int64_t n) {
  BlockQ8_0* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* x = src + b * kQK8_0;
    __m256 v[4];
    for (int k = 0; k < 4; ++k) v[k] = _mm256_loadu_ps(x + 8 * k);
    const __m256 m = _mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])),
                                   _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3])));
    const float amax = hmax(m);
    uint16_t dh = _cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT);
    if (half_to_float(dh) * 127.0f < amax) ++dh;  // as in ref::q8_0_from_float
    const float d = half_to_float(dh);
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = _mm256_cvtps_epi32(round_away_clamped(_mm256_mul_ps(v[k], id), 127.0f));
    }
    blocks[b].d = dh;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs),
                        pack_i32_to_i8(q[0], q[1], q[2], q[3]));
  }
}

}  // namespace strata::kernels::avx2
