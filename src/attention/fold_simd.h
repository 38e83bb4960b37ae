// The SIMD fold of one K/V tile (see tile_kernels.h), written once over a vector type V
// (Avx2Vec in tile_kernels_avx2.cpp, Avx512Vec in tile_kernels_avx512.cpp) and included
// only by those files. V provides W lanes of float with masked loads/stores, loads of
// float or half tile elements (load_elems: lanes past n_valid read as 0 and are never
// touched in memory), fma, max, fixed-order horizontal max/sum, rounding to the nearest
// integer and times_pow2 (y * 2^n for integral n) for exp_clamped below.
//
// Per query row the steps are the reference's: scores as two fma chains over d (even and
// odd d) with one lane per key, then the online-softmax update, then acc * c plus p_j v_j
// for j in order, column strip by column strip. The roundings differ (a polynomial exp,
// a fixed-order horizontal sum of the p_j, the sum update as one fma), so results agree
// with the reference to float tolerance, not bit for bit. Rows are processed in register
// groups, but no row's result depends on which other rows share its group.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "attention/tile_kernels.h"
#include "kernels/cpu/simd_exp.h"

namespace strata::attention::simd {

using kernels::simd::exp_clamped;

// Scores of R query rows against keys [c, c + W) of the tile (lanes past the tile's end
// masked off), scaled, stored to p rows (stride ldp) at column c.
template <class V, class Elem, int R>
inline void scores_rows(const float* q, int64_t hd, const Elem* kc, int64_t bs,
                        typename V::Mask m, int64_t n_valid, float scale, float* p, int64_t ldp) {
  typename V::F even[R], odd[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) even[r] = odd[r] = V::zero();
  int64_t d = 0;
  for (; d + 1 < hd; d += 2) {
    const auto k0 = V::load_elems(kc + d * bs, m, n_valid);
    const auto k1 = V::load_elems(kc + (d + 1) * bs, m, n_valid);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      even[r] = V::fma(V::set1(q[r * hd + d]), k0, even[r]);
      odd[r] = V::fma(V::set1(q[r * hd + d + 1]), k1, odd[r]);
    }
  }
  if (d < hd) {
    const auto k0 = V::load_elems(kc + d * bs, m, n_valid);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) even[r] = V::fma(V::set1(q[r * hd + d]), k0, even[r]);
  }
  const auto s = V::set1(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) V::store(p + r * ldp, V::mul(V::add(even[r], odd[r]), s));
}

// acc rows (R of them, stride hd) over columns [d0, d0 + 4W) clipped to hd:
// acc = acc * c_r + sum_j p_r[j] * v_j[d], j in [0, n).
template <class V, class Elem, int R>
inline void accumulate_rows(const float* p, int64_t ldp, const Elem* v, int64_t n, int64_t hd,
                            int64_t d0, const float* c, float* acc) {
  typename V::Mask mk[4];
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) mk[k] = V::first(hd - d0 - k * V::W);
  typename V::F a[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const auto cr = V::set1(c[r]);
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) a[r][k] = V::mul(V::maskz_load(acc + r * hd + d0 + k * V::W, mk[k]), cr);
  }
  for (int64_t j = 0; j < n; ++j) {
    const Elem* vj = v + j * hd + d0;
    typename V::F vk[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) vk[k] = V::load_elems(vj + k * V::W, mk[k], hd - d0 - k * V::W);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto pj = V::set1(p[r * ldp + j]);
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) a[r][k] = V::fma(pj, vk[k], a[r][k]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) V::mask_store(acc + r * hd + d0 + k * V::W, mk[k], a[r][k]);
}

template <class V, class Elem>
void fold_elems(const FoldTile& f) {
  const int64_t n = f.j1 - f.j0, hd = f.head_dim, bs = f.block_size;
  const auto* kt = static_cast<const Elem*>(f.kt);
  const auto* vt = static_cast<const Elem*>(f.v);
  const int64_t ldp = padded_block(bs);
  // 1. Scores, W keys at a time, up to 8 rows per pass (16 fma chains in flight).
  for (int64_t c = 0; c < n; c += V::W) {
    const auto m = V::first(n - c);
    const Elem* kc = kt + f.j0 + c;
    for (int64_t r0 = 0; r0 < f.n_q; r0 += 8) {
      const float* q = f.q + r0 * hd;
      float* p = f.p + r0 * ldp + c;
      switch (std::min<int64_t>(8, f.n_q - r0)) {
        case 8: scores_rows<V, Elem, 8>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 7: scores_rows<V, Elem, 7>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 6: scores_rows<V, Elem, 6>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 5: scores_rows<V, Elem, 5>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 4: scores_rows<V, Elem, 4>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 3: scores_rows<V, Elem, 3>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        case 2: scores_rows<V, Elem, 2>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
        default: scores_rows<V, Elem, 1>(q, hd, kc, bs, m, n - c, f.scale, p, ldp); break;
      }
    }
  }
  // 2. The online-softmax update per row; p becomes exp(s - m), 0 past the tile's end.
  constexpr int64_t kMaxRows = 64;
  float corr[kMaxRows];
  // 3. acc = acc * c + P V for rows [r / kMaxRows * kMaxRows, r] once their corrections
  // are ready (r the last row of a kMaxRows group, or of the tile), 4 rows at a time.
  auto accumulate_through = [&](int64_t r) {
    const int64_t g0 = r / kMaxRows * kMaxRows, g1 = r + 1;
    for (int64_t d0 = 0; d0 < hd; d0 += 4 * V::W) {
      for (int64_t r0 = g0; r0 < g1; r0 += 4) {
        const float* pr = f.p + r0 * ldp;
        const Elem* v = vt + f.j0 * hd;
        const float* cr0 = corr + (r0 - g0);
        float* acc = f.acc + r0 * hd;
        switch (std::min<int64_t>(4, g1 - r0)) {
          case 4: accumulate_rows<V, Elem, 4>(pr, ldp, v, n, hd, d0, cr0, acc); break;
          case 3: accumulate_rows<V, Elem, 3>(pr, ldp, v, n, hd, d0, cr0, acc); break;
          case 2: accumulate_rows<V, Elem, 2>(pr, ldp, v, n, hd, d0, cr0, acc); break;
          default: accumulate_rows<V, Elem, 1>(pr, ldp, v, n, hd, d0, cr0, acc); break;
        }
      }
    }
  };
  auto ready = [&](int64_t r) { return r % kMaxRows == kMaxRows - 1 || r + 1 == f.n_q; };
  int64_t r = 0;
  if constexpr (V::W == 16) {
    // 16 rows at once, one lane per row for the maxima, corrections and sums (see
    // Avx512Vec::transpose_reduce): one row at a time, each row's chain of horizontal
    // reductions and exps ran nearly serially and cost more than its 128 fmas. For finite
    // scores every value is the one the per-row loop below computes (with a NaN score the
    // two may disagree on whether the row's max is NaN).
    for (; r + 16 <= f.n_q; r += 16) {
      typename V::F v[16];
      for (int i = 0; i < 16; ++i) {
        const float* p = f.p + (r + i) * ldp;
        v[i] = V::load_or_neg_inf(p, V::first(n));
        for (int64_t c = V::W; c < n; c += V::W) v[i] = V::max(v[i], V::load_or_neg_inf(p + c, V::first(n - c)));
      }
      const auto old_max = V::load(f.max + r);
      const auto m = V::max(old_max, V::transpose_reduce(v, [](auto a, auto b) { return V::max(a, b); }));
      const auto cr = exp_clamped<V>(V::sub(old_max, m));
      for (int i = 0; i < 16; ++i) {
        float* p = f.p + (r + i) * ldp;
        const auto vm = V::broadcast_lane(m, i);
        auto vsum = V::zero();
        for (int64_t c = 0; c < n; c += V::W) {
          const auto e = V::zero_outside(exp_clamped<V>(V::sub(V::load(p + c), vm)), V::first(n - c));
          V::store(p + c, e);
          vsum = V::add(vsum, e);
        }
        v[i] = vsum;
      }
      const auto sums = V::transpose_reduce(v, [](auto a, auto b) { return V::add(a, b); });
      V::store(f.sum + r, V::fma(V::load(f.sum + r), cr, sums));
      V::store(f.max + r, m);
      V::store(corr + r % kMaxRows, cr);
      if (ready(r + 15)) accumulate_through(r + 15);
    }
  }
  for (; r < f.n_q; ++r) {
    float* p = f.p + r * ldp;
    auto vmax = V::set1(f.max[r]);
    for (int64_t c = 0; c < n; c += V::W) vmax = V::max(vmax, V::load_or_neg_inf(p + c, V::first(n - c)));
    const float m = V::reduce_max(vmax);
    const float cr = V::first_lane(exp_clamped<V>(V::set1(f.max[r] - m)));
    auto vsum = V::zero();
    const auto vm = V::set1(m);
    for (int64_t c = 0; c < n; c += V::W) {
      const auto mask = V::first(n - c);
      const auto e = V::zero_outside(exp_clamped<V>(V::sub(V::load(p + c), vm)), mask);
      V::store(p + c, e);
      vsum = V::add(vsum, e);
    }
    f.sum[r] = std::fma(f.sum[r], cr, V::reduce_add(vsum));
    f.max[r] = m;
    corr[r % kMaxRows] = cr;
    if (ready(r)) accumulate_through(r);
  }
}

template <class V>
inline void widen(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += V::W) V::mask_store(dst + i, V::first(n - i), V::load_elems(src + i, V::first(n - i), n - i));
}

// Tiles this small (keys + values) are widened to float on the stack for prefill.
constexpr int64_t kMaxWidenedTile = 4096;

template <class V>
void fold(const FoldTile& f) {
  if (!f.f16) return fold_elems<V, float>(f);
  // With many rows (prefill: kQueryTile tokens x the heads of a KV head), converting the
  // f16 tile once beats converting it as it is loaded: keys are loaded once per 8 rows and
  // values once per 4, and each conversion takes an FP-port slot from the fmas. The
  // conversion is exact, so the result is the same bits either way.
  const int64_t n_k = f.head_dim * f.block_size;
  if (f.n_q < 16 || 2 * n_k > kMaxWidenedTile) return fold_elems<V, uint16_t>(f);
  alignas(64) float tile[kMaxWidenedTile];
  widen<V>(static_cast<const uint16_t*>(f.kt), tile, n_k);
  const int64_t n = f.j1 - f.j0;
  widen<V>(static_cast<const uint16_t*>(f.v) + f.j0 * f.head_dim, tile + n_k + f.j0 * f.head_dim, n * f.head_dim);
  FoldTile wide = f;
  wide.kt = tile;
  wide.v = tile + n_k;
  wide.f16 = false;
  fold_elems<V, float>(wide);
}

}  // namespace strata::attention::simd
