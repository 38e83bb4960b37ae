// The AVX-512 fold with bf16 tiles computed by AVX512_BF16 dot products (see
// tile_kernels.h): vdpbf16ps adds two bf16 products per f32 lane, so one instruction does
// the work of two fmas. Scores take 16 keys x 2 dimensions per key load (the keys'
// dimension pairs, kv/tile_layout.h) against a broadcast pair of query elements; values
// take 16 dimensions x 2 keys per load against a broadcast pair of softmax weights. The
// query is packed to bf16 once per fold and each row's weights are packed in place of
// their f32 scores as the softmax computes them, with an exp only as precise as bf16
// weights need. Other tiles go to the AVX-512 fold.
#pragma GCC diagnostic ignored "-Wuninitialized"  // see kernels/quant/legacy_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <cstring>

#include "attention/avx512_vec.h"
#include "attention/fold_quant_keys.h"
#include "attention/fold_simd.h"
#include "attention/tile_kernels.h"

namespace strata::attention::avx512bf16 {
namespace {

using V = simd::Avx512Vec;
using Column = simd::KeyColumn<uint16_t>;

inline uint16_t load_u16(const uint16_t* p) {
  uint16_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline int32_t load_u32(const uint16_t* p) {  // a pair of bf16 values
  int32_t x;
  std::memcpy(&x, p, sizeof x);
  return x;
}
inline __m512 dot2(__m512 acc, __m512i a, __m512i b) {
  return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}
// The first n pairs of 16-bit words (n clamped to 0..16).
inline __mmask32 first_pairs(int64_t n) {
  return n >= 16  ? __mmask32(0xffffffffu)
         : n <= 0 ? __mmask32(0)
                  : static_cast<__mmask32>((1u << (2 * n)) - 1);
}
// The even or odd bf16 halves of 16 pairs, as float.
inline __m512 even_halves(__m512i x) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}
inline __m512 odd_halves(__m512i x) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(x, _mm512_set1_epi32(static_cast<int32_t>(0xffff0000u))));
}

// exp(x) for x <= 0, x clamped at -80, to about 6e-6 relative: enough for a weight that is
// rounded to bf16 next (2^-9 relative), where simd::exp_clamped's degree-6 polynomial
// spends four more operations on float precision (the softmax was 30% of a prefill
// fold's time). x = n ln2 + r with |r| <= ln2/2 (ln2 in one part: an
// error of 2e-7 at n = -116); exp(r) = 1 + r (1 + r (c2 + r (c3 + r c4))), a
// relative-error least-squares fit, so exp(0) is exactly 1; times 2^n with the lanes
// outside m zeroed. Away from the lanes' -80 clamp a weight differs from the reference's
// rounded std::exp by at most one bf16 ulp, and only within 6e-6 of a rounding boundary.
inline __m512 exp_for_bf16(__m512 x, __mmask16 m) {
  x = _mm512_max_ps(_mm512_set1_ps(-80.0f), x);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693147180559945f), x);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(4.0917389095e-2f), r, _mm512_set1_ps(1.6753986478e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0008934736e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(m, p, n);
}

// Scores of R packed query rows against C key columns (16 keys each): R x C
// accumulators, one vdpbf16ps chain over dimension pairs.
template <int R, int C>
inline void scores_tile(const uint16_t* q, int64_t hd, int64_t bs, const Column* col, float scale,
                        float* p, int64_t ldp, simd::LinePrefetcher& shared_pf) {
  simd::LinePrefetchPass pf(shared_pf);
  __mmask32 m[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) m[c] = first_pairs(col[c].n_valid);
  __m512 a[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) a[r][c] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 2) {  // dimension pair d / 2 starts at element d * bs
    pf.step();
    __m512i k[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) k[c] = _mm512_maskz_loadu_epi16(m[c], col[c].k + d * bs);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512i qd = _mm512_set1_epi32(load_u32(q + r * hd + d));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) a[r][c] = dot2(a[r][c], qd, k[c]);
    }
  }
  const __m512 s = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      _mm512_storeu_ps(p + r * ldp + col[c].p_off, _mm512_mul_ps(a[r][c], s));
}

template <int C, int R = V::kScoreRows>
inline void scores_rows(int64_t n_rows, const uint16_t* q, int64_t hd, int64_t bs,
                        const Column* col, float scale, float* p, int64_t ldp,
                        simd::LinePrefetcher& pf) {
  if constexpr (R == V::kScoreRows) {  // as simd::scores_rows
    for (; simd::take_score_pass(n_rows, R); n_rows -= R, q += R * hd, p += R * ldp)
      scores_tile<R, C>(q, hd, bs, col, scale, p, ldp, pf);
    if (n_rows > R) {
      constexpr int S = simd::score_split_rows<R>;
      scores_tile<S, C>(q, hd, bs, col, scale, p, ldp, pf);
      n_rows -= S, q += S * hd, p += S * ldp;
    }
  }
  if constexpr (R > 1) {
    if (n_rows == R - 1) return scores_tile<R - 1, C>(q, hd, bs, col, scale, p, ldp, pf);
    scores_rows<C, R - 1>(n_rows, q, hd, bs, col, scale, p, ldp, pf);
  }
}

// fold_elems' multiplications for bf16 tiles, with the fold's query packed at q.
struct Bf16Dots {
  const uint16_t* q;

  // The prefetcher's steps over a fold: one per dimension pair of each score pass and
  // column group, then one per key pair of each value pass and column strip.
  static int64_t prefetch_steps(const FoldTile& f) {
    const int64_t keys = f.j1 - f.j0;
    return (f.n_q + V::kScoreRows - 1) / V::kScoreRows * ((keys + 63) / 64) * f.head_dim / 2 +
           value_prefetch_steps(f);
  }
  static int64_t value_prefetch_steps(const FoldTile& f) {
    return (f.n_q + V::kAccRows - 1) / V::kAccRows * ((f.head_dim + 63) / 64) * (f.j1 - f.j0) / 2;
  }
  void scores(const FoldTile& f, int64_t ldp, simd::LinePrefetcher& pf) const {
    const int64_t hd = f.head_dim, bs = f.block_size;
    simd::KeyColumns<V, uint16_t, 2> columns(f);
    Column col[4];
    for (int nc; (nc = columns.next(col, 4)) > 0;) {
      switch (nc) {
        case 4:
          scores_rows<4>(f.n_q, q, hd, bs, col, f.scale, f.p, ldp, pf);
          break;
        case 3:
          scores_rows<3>(f.n_q, q, hd, bs, col, f.scale, f.p, ldp, pf);
          break;
        case 2:
          scores_rows<2>(f.n_q, q, hd, bs, col, f.scale, f.p, ldp, pf);
          break;
        default:
          scores_rows<1>(f.n_q, q, hd, bs, col, f.scale, f.p, ldp, pf);
          break;
      }
    }
  }

  // simd::exp_row with exp_for_bf16, each p rounded to bf16 and the row packed to bf16 in
  // place (p[j] as a bf16 value at ((uint16_t*)p)[j]; a step writes below what it has
  // read). Returns the sums of the rounded values: one vdpbf16ps of the packed weights
  // against 1.0 per 32 (lane i adds weights 2i + 1 and 2i, exactly as products), where
  // unpacking them to float took six operations and a serial chain of adds.
  V::F exp_row(float* p, int64_t nk, V::F m) const {
    auto* out = reinterpret_cast<uint16_t*>(p);
    const __m512i ones = _mm512_set1_epi16(0x3f80);  // bf16 1.0
    __m512 s = _mm512_setzero_ps();
    for (int64_t c = 0; c < nk; c += 32) {
      const __m512 e0 = exp_for_bf16(V::sub(V::load(p + c), m), V::first(nk - c));
      const __m512 e1 = exp_for_bf16(V::sub(V::load(p + c + 16), m), V::first(nk - c - 16));
      const __m512i packed = (__m512i)_mm512_cvtne2ps_pbh(e1, e0);  // e0 in the low half
      _mm512_storeu_si512(out + c, packed);
      s = dot2(s, packed, ones);
    }
    return s;
  }

  // acc = acc * c + P V for R rows that all fold the first n keys: slots 2m and 2m + 1 of a
  // block as one vdpbf16ps when both are folded, a key whose partner is not as one fma.
  template <int R>
  void accumulate(const float* p, int64_t ldp, const FoldTile& f, int64_t n, const float* c,
                  float* acc, simd::LinePrefetcher& shared_pf) const {
    simd::LinePrefetchPass pf(shared_pf);
    const int64_t hd = f.head_dim, bs = f.block_size;
    const auto* pb = reinterpret_cast<const uint16_t*>(p);
    const int64_t ldpb = 2 * ldp;
    for (int64_t d0 = 0; d0 < hd; d0 += 64) {
      __mmask16 mk[4];
      __mmask32 mp[4];
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        mk[k] = V::first(hd - d0 - 16 * k);
        mp[k] = first_pairs(hd - d0 - 16 * k);
      }
      __m512 a[R][4];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 cr = _mm512_set1_ps(c[r]);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
          a[r][k] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mk[k], acc + r * hd + d0 + 16 * k), cr);
      }
      // One key j (fold index) of slot s, its value the even or odd halves of its pair row.
      auto single = [&](const uint16_t* vb, int64_t s, int64_t j) {
        const uint16_t* row = vb + ((s >> 1) * hd + d0) * 2;
        __m512 vk[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m512i x = _mm512_maskz_loadu_epi16(mp[k], row + 32 * k);
          vk[k] = (s & 1) ? odd_halves(x) : even_halves(x);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
          const __m512 pj = _mm512_set1_ps(bf16_to_fp32(load_u16(pb + r * ldpb + j)));
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) a[r][k] = _mm512_fmadd_ps(pj, vk[k], a[r][k]);
        }
      };
      for (int64_t j = 0; j < n;) {  // block by block
        const int64_t key = f.j0 + j, slot = key % bs;
        const int64_t end = j + std::min(bs - slot, n - j);
        const auto* vb = static_cast<const uint16_t*>(f.v[key / bs]);
        int64_t s = slot;
        if (s & 1) single(vb, s++, j++);
        for (; j + 2 <= end; j += 2, s += 2) {
          pf.step();
          const uint16_t* row = vb + ((s >> 1) * hd + d0) * 2;
          __m512i vk[4];
#pragma GCC unroll 4
          for (int k = 0; k < 4; ++k) vk[k] = _mm512_maskz_loadu_epi16(mp[k], row + 32 * k);
#pragma GCC unroll 8
          for (int r = 0; r < R; ++r) {
            const __m512i pj = _mm512_set1_epi32(load_u32(pb + r * ldpb + j));
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) a[r][k] = dot2(a[r][k], pj, vk[k]);
          }
        }
        if (j < end) single(vb, s, j++);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
          _mm512_mask_storeu_ps(acc + r * hd + d0 + 16 * k, mk[k], a[r][k]);
    }
  }
};

// The packed query of one fold: up to this many bf16 elements (rows in chunks).
constexpr int64_t kMaxPackedQuery = 8192;

void fold_bf16(const FoldTile& f) {
  const int64_t hd = f.head_dim;
  const int64_t chunk = simd::rows_per_slice(f, kMaxPackedQuery);
  if (hd > kMaxPackedQuery)
    return reference_tile_kernels().fold(f);  // the model's shape: every fold alike
  alignas(64) uint16_t q[kMaxPackedQuery];
  for (int64_t r0 = 0; r0 < f.n_q; r0 += chunk) {
    const FoldTile rows = simd::row_slice(f, r0, std::min(f.n_q, r0 + chunk));
    const int64_t n = rows.n_q * hd;
    for (int64_t i = 0; i < n; i += 32) {
      const __m512 lo = _mm512_maskz_loadu_ps(V::first(n - i), rows.q + i);
      const __m512 hi = _mm512_maskz_loadu_ps(V::first(n - i - 16), rows.q + i + 16);
      _mm512_mask_storeu_epi16(q + i, first_pairs((n - i + 1) / 2),
                               (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    simd::fold_elems<V>(rows, Bf16Dots{q});
  }
}

}  // namespace

void fold(const FoldTile& tile) {
  // Quantized keys: int8 scores (fold_quant_keys.h), then this fold's bf16 softmax and
  // value passes.
  const bool quant_keys = tile.elem == TileElem::q8_keys || tile.elem == TileElem::q4_keys;
  if (quant_keys && tile.head_dim > simd::kMaxQuantHeadDim)
    return reference_tile_kernels().fold(tile);
  if (tile.elem == TileElem::q8_keys)
    return simd::fold_elems<V>(tile, simd::QuantKeyDots<V, simd::Q8Keys, Bf16Dots>{{nullptr}});
  if (tile.elem == TileElem::q4_keys)
    return simd::fold_elems<V>(tile, simd::QuantKeyDots<V, simd::Q4Keys, Bf16Dots>{{nullptr}});
  if (tile.elem != TileElem::bf16) return avx512::fold(tile);
  fold_bf16(tile);
}

}  // namespace strata::attention::avx512bf16
