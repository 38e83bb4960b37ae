// avx2 quantize-on-write of q8_0 / q4_0 KV rows (see kv_quantize.h): the group max, the
// rounding and the clamping 8 elements per register, then the int8 or nibble stores
// (scattered one per row for the transposed keys). Same bytes as kv/kv_quant.h's
// references: max is exact, the scale is computed by the same scalar code, and each
// element is x * inv rounded to nearest even, as nearbyint.
#include <immintrin.h>

#include <cstring>

#include "attention/kv_quantize.h"
#include "core/fp16.h"
#include "kv/kv_quant.h"

namespace strata::attention::avx2 {
namespace {

inline __m256 abs8(__m256 x) {
  return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
}

// max |x| over n (16 or 32) elements; NaNs are skipped, as std::fmax does (max_ps returns
// its second operand, the running max, when the first is NaN).
inline float group_amax(const float* x, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) acc = _mm256_max_ps(abs8(_mm256_loadu_ps(x + i)), acc);
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

// The first element of largest magnitude amax (> 0), as q4_0_scale's strict > keeps.
inline float first_at(const float* x, int64_t n, float amax) {
  const __m256 a = _mm256_set1_ps(amax);
  for (int64_t i = 0; i < n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(abs8(_mm256_loadu_ps(x + i)), a, _CMP_EQ_OQ));
    if (mask != 0) return x[i + __builtin_ctz(static_cast<unsigned>(mask))];
  }
  return 0.0f;  // not reached
}

// n elements times inv, rounded, clamped to [lo, hi], plus bias, as int8 into out.
inline void quantize(const float* x, int64_t n, float inv, float lo, float hi, int bias,
                     int8_t* out) {
  const __m256 vinv = _mm256_set1_ps(inv), vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  const __m256i vb = _mm256_set1_epi32(bias);
  for (int64_t i = 0; i < n; i += 8) {
    __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_min_ps(_mm256_max_ps(r, vlo), vhi);  // a NaN becomes lo, as fmax(lo, NaN)
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(r), vb);
    __m128i p = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    p = _mm_packs_epi16(p, p);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), p);
  }
}

// 16 nibbles (bytes 0..15) into 8 bytes, element 2i in the low nibble of byte i.
inline __m128i pack_nibbles(const int8_t* t) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(t));
  return _mm_maddubs_epi16(v, _mm_set1_epi16(0x1001));  // t[2i] + 16 t[2i+1], as int16
}

}  // namespace

void store_q8_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  auto* q = reinterpret_cast<int8_t*>(tile);
  auto* scales = reinterpret_cast<uint16_t*>(tile + kv_quant::q8_scale_offset(bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  alignas(32) int8_t t[32];
  for (int64_t g = 0; g < n_groups; ++g) {
    const float* x = src + g * group;
    const uint16_t sh = fp32_to_fp16(group_amax(x, group) / 127.0f);
    const float s = fp16_to_fp32(sh);
    quantize(x, group, s > 0.0f ? 1.0f / s : 0.0f, -127.0f, 127.0f, 0, t);
    if (keys) {
      for (int64_t i = 0; i < group; ++i) q[kv_layout::key_index(g * group + i, slot, bs)] = t[i];
    } else {
      std::memcpy(q + kv_layout::value_index(slot, g * group, hd), t, static_cast<size_t>(group));
    }
    scales[kv_quant::scale_index(keys, g, slot, bs, n_groups)] = sh;
  }
}

void store_q4_0(uint8_t* tile, bool keys, const float* src, int64_t slot, int64_t bs, int64_t hd) {
  auto* scales = reinterpret_cast<uint16_t*>(tile + kv_quant::scale_offset(DType::Q4_0, bs, hd));
  const int64_t group = kv_quant::group_size(hd);
  const int64_t n_groups = hd / group;
  alignas(32) int8_t t[32];
  for (int64_t g = 0; g < n_groups; ++g) {
    const float* x = src + g * group;
    const float amax = group_amax(x, group);
    const float m = amax > 0.0f ? first_at(x, group, amax) : 0.0f;
    const uint16_t sh = fp32_to_fp16(m / -8.0f);
    const float s = fp16_to_fp32(sh);
    quantize(x, group, s != 0.0f ? 1.0f / s : 0.0f, -8.0f, 7.0f, 8, t);
    scales[kv_quant::scale_index(keys, g, slot, bs, n_groups)] = sh;
    if (keys) {
      for (int64_t i = 0; i < group; ++i) {
        kv_quant::set_nibble(tile, kv_layout::key_index(g * group + i, slot, bs),
                             static_cast<uint8_t>(t[i]));
      }
      continue;
    }
    // A value's group is group / 2 whole bytes (hd even, groups of 16 or 32).
    uint8_t* dst = tile + kv_layout::value_index(slot, g * group, hd) / 2;
    const __m128i lo = pack_nibbles(t), hi = group > 16 ? pack_nibbles(t + 16) : lo;
    const __m128i b = _mm_packus_epi16(lo, hi);
    if (group > 16) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), b);
    } else {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), b);
    }
  }
}

}  // namespace strata::attention::avx2
