// The SIMD fold of a run of K/V tiles (see tile_kernels.h), written once over a vector
// type V (Avx2Vec in tile_kernels_avx2.cpp, Avx512Vec in avx512_vec.h) and included only
// by the files that define or include those. V provides W lanes of float with masked loads/stores,
// loads of float or half tile elements (load_elems: lanes past n_valid read as 0 and are never
// touched in memory), fma, max, fixed-order horizontal max/sum, rounding to the nearest
// integer and times_pow2 (y * 2^n for integral n) for exp_clamped below, round_bf16
// (to the nearest bf16 value, as float), load_bf16_pairs (W pairs split into the first and
// second of each, as float), kScoreRows, the query rows per score pass (4 key columns
// each; 4 x kScoreRows accumulators), kAccRows, the rows per value pass (4 x kAccRows
// accumulators), and kWidenF16Rows, the fold size from which f16 tiles are widened to
// float once rather than converted as they are loaded.
//
// Per query row the steps are the reference's: scores as one fma chain over d with one
// lane per key, then the online-softmax update, then acc * c plus p_j v_j
// for j in order, column strip by column strip. The roundings differ (a polynomial exp,
// a fixed-order horizontal sum of the p_j, the sum update as one fma), so results agree
// with the reference to float tolerance, not bit for bit. Rows are processed in register
// groups, but no row's result depends on which other rows share its group.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "attention/tile_kernels.h"
#include "core/fp16.h"
#include "core/prefetch.h"
#include "kernels/cpu/simd_exp.h"
#include "kv/kv_quant.h"
#include "kv/tile_layout.h"

namespace strata::attention::simd {

using kernels::simd::exp_clamped;

// Internal linkage for the non-template helpers below: each including file is compiled
// with its own instruction set, and an out-of-line copy shared through the linker could
// carry one file's instructions into another's path.
namespace {

// Rows [r0, r1) of a fold as a fold of their own. With causal rows, r0 must be a multiple
// of rows_per_token, or the slice a single row.
inline FoldTile row_slice(const FoldTile& f, int64_t r0, int64_t r1) {
  FoldTile s = f;
  s.q = f.q + r0 * f.head_dim;
  s.n_q = r1 - r0;
  s.max = f.max + r0;
  s.sum = f.sum + r0;
  s.acc = f.acc + r0 * f.head_dim;
  if (f.rows_per_token > 0) s.first_row_keys = f.first_row_keys + r0 / f.rows_per_token;
  if (f.q8.q != nullptr)
    s.q8 = f.q8.rows_from(r0, f.head_dim, f.head_dim / kv_quant::group_size(f.head_dim));
  return s;
}

// Rows per slice when a fold's rows must be cut to fit `limit` elements of query (rows of
// head_dim): whole tokens when one fits, else single rows; 0 when not even a row fits.
// Rows are independent, so any slicing gives the same bits.
inline int64_t rows_per_slice(const FoldTile& f, int64_t limit) {
  const int64_t rows = limit / f.head_dim;
  const int64_t rpt = f.rows_per_token > 0 ? f.rows_per_token : 1;
  return rows >= rpt ? rows / rpt * rpt : rows >= 1 ? 1 : 0;
}

// The first n lanes of x (all of them when n >= V::W) stored at p: a whole vector by a
// plain store, since AVX2's masked store (vmaskmovps) is microcoded on AMD cores (on Zen 4,
// widening a decode fold's f16 tiles spent 90% of its time on it).
template <class V>
inline void store_first(float* p, int64_t n, typename V::F x) {
  if (n >= V::W) {
    V::store(p, x);
  } else {
    V::mask_store(p, V::first(n), x);
  }
}

// A loaded vector kept in a register: with a plain load GCC may fold the load into each
// fma that uses the vector (a memory operand), loading it once per row of a pass instead
// of once per pass (masked loads do not fold); AVX2 score passes ran 25% slower that way.
template <class F>
inline void keep_in_register(F& x) {
  __asm__("" : "+v"(x));
}

// One key or value vector of a pass: whole (a plain load kept in a register for float
// tiles) when kFull, else its first n_valid elements (mask m).
template <class V, bool kFull, class Elem>
inline typename V::F load_column(const Elem* src, typename V::Mask m, int64_t n_valid) {
  if constexpr (kFull && std::is_same_v<Elem, float>) {
    auto x = V::load(src);
    keep_in_register(x);
    return x;
  } else {
    return V::load_elems(src, m, kFull ? V::W : n_valid);
  }
}

// Issues the prefetches of a fold's FoldTile::next spread over n_steps calls of step()
// (a few lines each), and any left over at finish(); fold_elems spreads them over the
// fold's score and value passes. Each pass works on a copy (LinePrefetchPass), so that
// the state stays in registers through the pass's loop: kept
// in the caller's object, every step stored and reloaded it, and the 8-row decode fold
// spent a third of its score time in step(). The lines go to L2 (prefetcht1), not L1: a
// fold's tiles (16-32 KiB of bf16 K and V: 4-8 blocks) and the next fold's do not fit a 32
// KiB L1 together, so lines prefetched into it were evicted before use; into L2, an 8-row decode
// fold streaming bf16 tiles from memory ran 8-12 -> 15-18 GB/s on one Zen 4 core
// (attention_fold_bench blocks:16384 rows:8; f32 tiles 10 -> 18-21), prefill folds
// (rows:32) unchanged, and tg64 at 16K depth (Q4_0, 2 threads) 27.5-28.3 -> 31.1-32.5
// tok/s.
class LinePrefetcher {
 public:
  LinePrefetcher(const FoldTile& f, int64_t n_steps) : f_(&f) {
    if (f.next_bytes <= 0 || f.n_next <= 0) {
      per_step_ = 0;  // nothing to fetch
      return;
    }
    const int64_t lines = f.n_next * ((f.next_bytes + 63) / 64);
    per_step_ = n_steps > 0 ? (lines + n_steps - 1) / n_steps : lines;
    cur_ = static_cast<const char*>(f.next[0]);
    end_ = cur_ + f.next_bytes;
  }
  void step() {
    for (int64_t i = 0; i < per_step_; ++i) {
      if (cur_ >= end_) {
        if (++r_ >= f_->n_next) {
          per_step_ = 0;
          return;
        }
        cur_ = static_cast<const char*>(f_->next[r_]);
        end_ = cur_ + f_->next_bytes;
      }
      prefetch_l2(cur_);
      cur_ += 64;
    }
  }
  void finish() {
    if (per_step_ == 0) return;
    per_step_ = 1;
    while (per_step_ != 0) step();
  }

 private:
  const FoldTile* f_;
  int64_t per_step_ = 0;
  int r_ = 0;
  const char* cur_ = nullptr;
  const char* end_ = nullptr;
};

// A LinePrefetcher for one score or value pass: a copy in the pass's registers, written
// back when the pass ends.
class LinePrefetchPass {
 public:
  explicit LinePrefetchPass(LinePrefetcher& pf) : pf_(pf), copy_(pf) {}
  ~LinePrefetchPass() { pf_ = copy_; }
  LinePrefetchPass(const LinePrefetchPass&) = delete;
  LinePrefetchPass& operator=(const LinePrefetchPass&) = delete;
  void step() { copy_.step(); }

 private:
  LinePrefetcher& pf_;
  LinePrefetcher copy_;
};

}  // namespace

// Up to W consecutive keys of a fold that lie in one block: where their elements are and
// where their scores go.
template <class Elem>
struct KeyColumn {
  const Elem* k = nullptr;  // lane i's key: kv/tile_layout.h's key layout from slot i
  int64_t n_valid = 0;      // lanes that are keys; the rest load as 0 and are never touched
  int64_t p_off = 0;        // the first key's score column (keys from j0)
};

// The fold's keys as columns, in order: one per W keys of a block (fewer at a block's or
// the fold's end). A column's scores are stored as a whole vector, so a short column's
// spare lanes land where the next column's scores go and are overwritten by them.
// kSlotElems: elements per slot in a key tile's row (2 for bf16 pairs, see kv/tile_layout.h).
template <class V, class Elem, int kSlotElems = 1>
class KeyColumns {
 public:
  explicit KeyColumns(const FoldTile& f) : f_(f), j_(f.j0) {}
  // Writes up to n next columns to out; returns how many.
  int next(KeyColumn<Elem>* out, int n) {
    int k = 0;
    const int64_t bs = f_.block_size;
    while (k < n && j_ < f_.j1) {
      const int64_t b = j_ / bs, slot = j_ % bs;
      const int64_t len = std::min({V::W, bs - slot, f_.j1 - j_});
      out[k++] = {static_cast<const Elem*>(f_.kt[b]) + slot * kSlotElems, len, j_ - f_.j0};
      j_ += len;
    }
    return k;
  }

 private:
  const FoldTile& f_;
  int64_t j_;
};

// Scores of R query rows against C key columns: R x C accumulators, each a chain of fmas
// over d in order; every query element loaded feeds C columns and every key vector R rows.
// kFull: every column holds W keys, so its vectors load whole (plain loads instead of
// AVX2's masked ones, f16 without the short-column branch).
template <class V, class Elem, int R, int C, bool kFull = false>
inline void scores_tile(const float* q, int64_t hd, int64_t bs, const KeyColumn<Elem>* col,
                        float scale, float* p, int64_t ldp, LinePrefetcher& shared_pf) {
  LinePrefetchPass pf(shared_pf);
  typename V::Mask m[C];
#pragma GCC unroll 4
  for (int c = 0; c < C; ++c) m[c] = V::first(col[c].n_valid);
  typename V::F a[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) a[r][c] = V::zero();
  for (int64_t d = 0; d < hd; ++d) {
    pf.step();
    typename V::F k[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      k[c] = load_column<V, kFull>(col[c].k + d * bs, m[c], col[c].n_valid);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const auto qd = V::set1(q[r * hd + d]);
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) a[r][c] = V::fma(qd, k[c], a[r][c]);
    }
  }
  const auto s = V::set1(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) V::store(p + r * ldp + col[c].p_off, V::mul(a[r][c], s));
}

// Whether a full pass of R rows should be taken from n_rows remaining: not when it would
// leave 1 or 2 rows, whose few accumulator chains wait on the multiply-add latency (a
// decode fold of 8 rows as 6 + 2 spent 17% of its time in the 2-row pass); those go as
// two passes of about half (score_split_rows).
inline bool take_score_pass(int64_t n_rows, int R) {
  return n_rows >= R && !(R >= 4 && n_rows > R && n_rows <= R + 2);
}
template <int R>
inline constexpr int score_split_rows = R / 2 + 1;

// Rows [0, n_rows) against C columns, kScoreRows rows per pass, then the remainder.
template <class V, class Elem, int C, int R = V::kScoreRows>
inline void scores_rows(int64_t n_rows, const float* q, int64_t hd, int64_t bs,
                        const KeyColumn<Elem>* col, float scale, float* p, int64_t ldp,
                        LinePrefetcher& pf) {
  if constexpr (R == V::kScoreRows) {
    bool full = true;
    for (int c = 0; c < C; ++c) full = full && col[c].n_valid == V::W;
    for (; take_score_pass(n_rows, R); n_rows -= R, q += R * hd, p += R * ldp) {
      if (full) {
        scores_tile<V, Elem, R, C, true>(q, hd, bs, col, scale, p, ldp, pf);
      } else {
        scores_tile<V, Elem, R, C>(q, hd, bs, col, scale, p, ldp, pf);
      }
    }
    if constexpr (R >= 4) {
      if (n_rows > R) {
        constexpr int S = score_split_rows<R>;
        scores_tile<V, Elem, S, C>(q, hd, bs, col, scale, p, ldp, pf);
        n_rows -= S, q += S * hd, p += S * ldp;
      }
    }
  }
  if constexpr (R > 1) {
    if (n_rows == R - 1) return scores_tile<V, Elem, R - 1, C>(q, hd, bs, col, scale, p, ldp, pf);
    scores_rows<V, Elem, C, R - 1>(n_rows, q, hd, bs, col, scale, p, ldp, pf);
  }
}

// scores_rows over nc columns, 1 <= nc <= C.
template <class V, class Elem, int C>
inline void scores_cols_of(int nc, int64_t n_rows, const float* q, int64_t hd, int64_t bs,
                           const KeyColumn<Elem>* col, float scale, float* p, int64_t ldp,
                           LinePrefetcher& pf) {
  if constexpr (C > 1) {
    if (nc < C)
      return scores_cols_of<V, Elem, C - 1>(nc, n_rows, q, hd, bs, col, scale, p, ldp, pf);
  }
  scores_rows<V, Elem, C>(n_rows, q, hd, bs, col, scale, p, ldp, pf);
}

// acc rows (R of them, stride hd, all with n keys) over columns [d0, d0 + C W) clipped to
// hd, C = V::kAccCols: acc = acc * c_r + sum_j p_r[j] * v_j[d], j in order over the fold's
// keys. kFull: the strip lies inside hd, so its vectors load and store whole (plain loads
// instead of AVX2's masked ones, and no mask registers held through the key loop).
template <class V, class Elem, int R, bool kFull>
inline void accumulate_rows(const float* p, int64_t ldp, const FoldTile& f, int64_t n, int64_t d0,
                            const float* c, float* acc, LinePrefetcher& shared_pf) {
  constexpr int C = V::kAccCols;
  LinePrefetchPass pf(shared_pf);
  const int64_t hd = f.head_dim, bs = f.block_size;
  typename V::Mask mk[C];
#pragma GCC unroll 4
  for (int k = 0; k < C; ++k) mk[k] = V::first(kFull ? V::W : hd - d0 - k * V::W);
  typename V::F a[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const auto cr = V::set1(c[r]);
#pragma GCC unroll 4
    for (int k = 0; k < C; ++k) {
      const float* ap = acc + r * hd + d0 + k * V::W;
      a[r][k] = V::mul(kFull ? V::load(ap) : V::maskz_load(ap, mk[k]), cr);
    }
  }
  for (int64_t j = 0; j < n;) {  // block by block
    const int64_t key = f.j0 + j, slot = key % bs;
    const int64_t len = std::min(bs - slot, n - j);
    const Elem* vb = static_cast<const Elem*>(f.v[key / bs]) + slot * hd + d0;
    for (int64_t i = 0; i < len; ++i, ++j) {
      pf.step();
      const Elem* vj = vb + i * hd;
      typename V::F vk[C];
#pragma GCC unroll 4
      for (int k = 0; k < C; ++k)
        vk[k] = load_column<V, kFull>(vj + k * V::W, mk[k], hd - d0 - k * V::W);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const auto pj = V::set1(p[r * ldp + j]);
#pragma GCC unroll 4
        for (int k = 0; k < C; ++k) a[r][k] = V::fma(pj, vk[k], a[r][k]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int k = 0; k < C; ++k)
      store_first<V>(acc + r * hd + d0 + k * V::W, kFull ? V::W : hd - d0 - k * V::W, a[r][k]);
}

// Lane-wise max of init and a score row's first nk values (nk >= 1).
template <class V>
inline typename V::F row_max(const float* p, int64_t nk, typename V::F init) {
  auto a = V::max(init, V::load_or_neg_inf(p, V::first(nk)));
  auto b = V::set1(-__builtin_inff());
  for (int64_t c = V::W; c < nk; c += 2 * V::W) {
    a = V::max(a, V::load_or_neg_inf(p + c, V::first(nk - c)));
    b = V::max(b, V::load_or_neg_inf(p + c + V::W, V::first(nk - c - V::W)));
  }
  return V::max(a, b);
}

// p = exp(p - m) over a score row's first nk values, 0 after them up to a whole pair of
// vectors (the scratch row has room, see fold_scratch_row); returns the lane-wise sums of
// the even and odd vectors, added. Two vectors per step, so two exps are in flight. With
// kRoundBf16 each p is rounded to bf16 (TileKernels::fold's bf16 tiles).
template <class V, bool kRoundBf16 = false>
inline typename V::F exp_row(float* p, int64_t nk, typename V::F m) {
  auto s0 = V::zero(), s1 = V::zero();
  for (int64_t c = 0; c < nk; c += 2 * V::W) {
    auto e0 = V::zero_outside(exp_clamped<V>(V::sub(V::load(p + c), m)), V::first(nk - c));
    auto e1 =
        V::zero_outside(exp_clamped<V>(V::sub(V::load(p + c + V::W), m)), V::first(nk - c - V::W));
    if constexpr (kRoundBf16) {
      e0 = V::round_bf16(e0);
      e1 = V::round_bf16(e1);
    }
    V::store(p + c, e0);
    V::store(p + c + V::W, e1);
    s0 = V::add(s0, e0);
    s1 = V::add(s1, e1);
  }
  return V::add(s0, s1);
}

// How a fold multiplies (fold_elems' steps 1 and 3, and the exp of step 2): f32 fmas over
// float or half tiles. kRoundBf16 rounds each p to bf16; with tiles of bf16 values
// widened to float and a query rounded to bf16, that is the bf16 fold's arithmetic.
template <class V, class Elem, bool kRoundBf16 = false>
struct FmaDots {
  // The prefetcher's steps over a fold: one per dimension of each score pass and column
  // group, then one per key of each value pass and column strip.
  static int64_t prefetch_steps(const FoldTile& f) {
    const int64_t keys = f.j1 - f.j0, strip = V::kScoreCols * V::W;
    return (f.n_q + V::kScoreRows - 1) / V::kScoreRows * ((keys + strip - 1) / strip) * f.head_dim +
           value_prefetch_steps(f);
  }
  static int64_t value_prefetch_steps(const FoldTile& f) {
    const int64_t keys = f.j1 - f.j0, strip = V::kAccCols * V::W;
    return (f.n_q + V::kAccRows - 1) / V::kAccRows * ((f.head_dim + strip - 1) / strip) * keys;
  }
  void scores(const FoldTile& f, int64_t ldp, LinePrefetcher& pf) const {
    const int64_t hd = f.head_dim, bs = f.block_size;
    KeyColumns<V, Elem> columns(f);
    KeyColumn<Elem> col[V::kScoreCols];
    for (int nc; (nc = columns.next(col, V::kScoreCols)) > 0;)
      scores_cols_of<V, Elem, V::kScoreCols>(nc, f.n_q, f.q, hd, bs, col, f.scale, f.p, ldp, pf);
  }
  typename V::F exp_row(float* p, int64_t nk, typename V::F m) const {
    return simd::exp_row<V, kRoundBf16>(p, nk, m);
  }
  // acc = acc * c + P V for R rows that all fold the first n keys.
  template <int R>
  void accumulate(const float* p, int64_t ldp, const FoldTile& f, int64_t n, const float* c,
                  float* acc, LinePrefetcher& pf) const {
    constexpr int64_t kStrip = V::kAccCols * V::W;
    for (int64_t d0 = 0; d0 < f.head_dim; d0 += kStrip) {
      if (d0 + kStrip <= f.head_dim) {
        accumulate_rows<V, Elem, R, true>(p, ldp, f, n, d0, c, acc, pf);
      } else {
        accumulate_rows<V, Elem, R, false>(p, ldp, f, n, d0, c, acc, pf);
      }
    }
  }
};

// dots.accumulate<rows> for 1 <= rows <= R.
template <int R, class Dots>
inline void accumulate_rows_of(const Dots& dots, int64_t rows, const float* p, int64_t ldp,
                               const FoldTile& f, int64_t n, const float* c, float* acc,
                               LinePrefetcher& pf) {
  if constexpr (R > 1) {
    if (rows < R) return accumulate_rows_of<R - 1>(dots, rows, p, ldp, f, n, c, acc, pf);
  }
  dots.template accumulate<R>(p, ldp, f, n, c, acc, pf);
}

template <class V, class Dots>
void fold_elems(const FoldTile& f, const Dots& dots) {
  const int64_t hd = f.head_dim, bs = f.block_size;
  const int64_t ldp = fold_scratch_row(bs);
  // The next fold's tiles are prefetched through both passes over this fold's tiles, the
  // scores' and the values': issued within the score passes alone (as they were), they
  // came faster than memory serves a core's misses and stalled those passes, while the
  // value passes fetched nothing (an 8-row decode fold streaming bf16 tiles from memory:
  // 1.70 -> 1.30 us, median of 5 in attention_fold_bench).
  LinePrefetcher pf(f, dots.prefetch_steps(f));
  // 1. Scores, up to 4 key columns x kScoreRows rows per pass. Every row gets the scores
  // of all the fold's keys; its softmax below reads only its own (row_keys).
  dots.scores(f, ldp, pf);
  // 2. The online-softmax update per row; p becomes exp(s - m) over the row's keys.
  constexpr int64_t kMaxRows = 64;
  float corr[kMaxRows];
  // 3. acc = acc * c + P V for rows [r / kMaxRows * kMaxRows, r] once their corrections
  // are ready (r the last row of a kMaxRows group, or of the tile), up to V::kAccRows rows
  // with the same keys at a time (so no row multiplies a value past its own keys, even by 0).
  auto accumulate_through = [&](int64_t r) {
    const int64_t g0 = r / kMaxRows * kMaxRows, g1 = r + 1;
    for (int64_t r0 = g0; r0 < g1;) {
      const int64_t nk = f.row_keys(r0);
      int64_t r1 = r0 + 1;
      while (r1 < g1 && r1 - r0 < V::kAccRows && f.row_keys(r1) == nk) ++r1;
      const float* pr = f.p + r0 * ldp;
      const float* cr0 = corr + (r0 - g0);
      float* acc = f.acc + r0 * hd;
      accumulate_rows_of<V::kAccRows>(dots, r1 - r0, pr, ldp, f, nk, cr0, acc, pf);
      r0 = r1;
    }
  };
  auto ready = [&](int64_t r) { return r % kMaxRows == kMaxRows - 1 || r + 1 == f.n_q; };
  int64_t r = 0;
  // Up to W rows at once, one lane per row for the maxima, corrections and sums (see
  // V::transpose_reduce; a decode fold's 8 rows fill half an AVX-512 vector): one row at
  // a time, each row's chain of horizontal reductions and exps ran nearly serially and
  // cost more than its 128 fmas. For finite scores every value is the one the per-row
  // loop below computes (with a NaN score the two may disagree on whether the row's max
  // is NaN).
  constexpr int W = static_cast<int>(V::W);
  for (int64_t nr; (nr = std::min<int64_t>(W, f.n_q - r)) >= 2; r += nr) {
    const auto rows = V::first(nr);
    typename V::F v[W];
    int64_t nk[W];
    for (int i = 0; i < W; ++i) {
      // Lanes past nr hold no row: -inf maxima and zero sums, nothing read.
      nk[i] = i < nr ? f.row_keys(r + i) : 0;
      v[i] = i < nr ? row_max<V>(f.p + (r + i) * ldp, nk[i], V::set1(-__builtin_inff()))
                    : V::set1(-__builtin_inff());
    }
    const auto old_max = V::load_or_neg_inf(f.max + r, rows);
    const auto m =
        V::max(old_max, V::transpose_reduce(v, [](auto a, auto b) { return V::max(a, b); }));
    const auto cr = exp_clamped<V>(V::sub(old_max, m));  // (lanes past nr: NaN, not stored)
    for (int i = 0; i < W; ++i) {
      v[i] = i < nr ? dots.exp_row(f.p + (r + i) * ldp, nk[i], V::broadcast_lane(m, i)) : V::zero();
    }
    const auto sums = V::transpose_reduce(v, [](auto a, auto b) { return V::add(a, b); });
    V::mask_store(f.sum + r, rows, V::fma(V::maskz_load(f.sum + r, rows), cr, sums));
    V::mask_store(f.max + r, rows, m);
    V::mask_store(corr + r % kMaxRows, rows, cr);
    if (ready(r + nr - 1)) accumulate_through(r + nr - 1);
  }
  for (; r < f.n_q; ++r) {
    const int64_t nk = f.row_keys(r);
    float* p = f.p + r * ldp;
    const float m = V::reduce_max(row_max<V>(p, nk, V::set1(f.max[r])));
    const float cr = V::first_lane(exp_clamped<V>(V::set1(f.max[r] - m)));
    f.sum[r] = std::fma(f.sum[r], cr, V::reduce_add(dots.exp_row(p, nk, V::set1(m))));
    f.max[r] = m;
    corr[r % kMaxRows] = cr;
    if (ready(r)) accumulate_through(r);
  }
  pf.finish();
}

template <class V>
inline void widen(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += V::W)
    store_first<V>(dst + i, n - i, V::load_elems(src + i, V::first(n - i), n - i));
}

// Folds whose tiles (keys + values, all blocks) are this small are widened to float on
// the stack for prefill: 32 KiB, four blocks at llama-1b's shape.
constexpr int64_t kMaxWidenedTile = 8192;

// n pairs of bf16 values at src, split into their first and second elements as float.
template <class V>
inline void split_pairs(const uint16_t* src, float* first, float* second, int64_t n) {
  int64_t i = 0;
  for (typename V::F a, b; i + V::W <= n; i += V::W) {
    V::load_bf16_pairs(src + 2 * i, a, b);
    V::store(first + i, a);
    V::store(second + i, b);
  }
  for (; i < n; ++i) first[i] = bf16_to_fp32(src[2 * i]), second[i] = bf16_to_fp32(src[2 * i + 1]);
}

// bf16 tiles without bf16 dot products: the tiles widened to float (exact) in the f32
// layout, the query rounded to bf16, and p rounded as it is computed, which is the
// reference's arithmetic summed in fma-chain order. The widened tiles take up to
// kMaxWidenedBf16 floats (128 KiB: eight blocks at head_dim 128) and the rounded query
// kMaxRoundedQuery (rows in slices). Shapes beyond that (which depend on the model and
// block size only, so every fold of a model takes the same path) go to the reference.
constexpr int64_t kMaxWidenedBf16 = 32768;
constexpr int64_t kMaxRoundedQuery = 4096;

template <class V>
void fold_bf16_widened(const FoldTile& f) {
  const int64_t hd = f.head_dim, bs = f.block_size, tile = hd * bs;
  const int64_t chunk = rows_per_slice(f, kMaxRoundedQuery);
  if (2 * kMaxFoldBlocks * tile > kMaxWidenedBf16 || hd > kMaxRoundedQuery)
    return reference_tile_kernels().fold(f);
  alignas(64) float buf[kMaxWidenedBf16];
  alignas(64) float q[kMaxRoundedQuery];
  FoldTile wide = f;
  wide.elem = TileElem::f32;
  for (int b = 0; b < f.n_blocks; ++b) {
    const auto* kp = static_cast<const uint16_t*>(f.kt[b]);
    const auto* vp = static_cast<const uint16_t*>(f.v[b]);
    float* kb = buf + 2 * b * tile;
    float* vb = kb + tile;
    // Keys: pair row m holds dimensions 2m and 2m + 1 of every slot.
    for (int64_t m = 0; m < hd / 2; ++m)
      split_pairs<V>(kp + m * bs * 2, kb + 2 * m * bs, kb + (2 * m + 1) * bs, bs);
    // Values: pair row m holds slots 2m and 2m + 1 (both widened; only the fold's are read).
    const int64_t lo = std::clamp<int64_t>(f.j0 - b * bs, 0, bs),
                  hi = std::clamp<int64_t>(f.j1 - b * bs, 0, bs);
    for (int64_t m = lo / 2; m < (hi + 1) / 2; ++m) {
      split_pairs<V>(vp + m * hd * 2, vb + 2 * m * hd, vb + (2 * m + 1) * hd, hd);
    }
    wide.kt[b] = kb;
    wide.v[b] = vb;
  }
  for (int64_t r0 = 0; r0 < f.n_q; r0 += chunk) {
    const int64_t r1 = std::min(f.n_q, r0 + chunk);
    FoldTile rows = row_slice(wide, r0, r1);
    const int64_t n = (r1 - r0) * hd;
    for (int64_t i = 0; i < n; i += V::W) {
      store_first<V>(q + i, n - i, V::round_bf16(V::maskz_load(rows.q + i, V::first(n - i))));
    }
    rows.q = q;
    fold_elems<V>(rows, FmaDots<V, float, true>{});
  }
}

template <class V>
void fold(const FoldTile& f) {
  if (f.elem == TileElem::bf16) return fold_bf16_widened<V>(f);
  if (f.elem == TileElem::f32) return fold_elems<V>(f, FmaDots<V, float>{});
  // With enough rows (V::kWidenF16Rows), converting the f16 tiles once beats converting
  // them as they are loaded: keys are loaded once per kScoreRows rows and values once per
  // kAccRows, and each conversion takes an FP-port slot from the fmas. The conversion is
  // exact, so the result is the same bits either way.
  const int64_t tile = f.head_dim * f.block_size;
  if (f.n_q < V::kWidenF16Rows || 2 * f.n_blocks * tile > kMaxWidenedTile)
    return fold_elems<V>(f, FmaDots<V, uint16_t>{});
  alignas(64) float buf[kMaxWidenedTile];
  FoldTile wide = f;
  wide.elem = TileElem::f32;
  for (int b = 0; b < f.n_blocks; ++b) {
    float* kb = buf + 2 * b * tile;
    float* vb = kb + tile;
    // Keys: the whole transposed tile. Values: the slots the fold reads.
    const int64_t lo = std::clamp<int64_t>(f.j0 - b * f.block_size, 0, f.block_size);
    const int64_t hi = std::clamp<int64_t>(f.j1 - b * f.block_size, 0, f.block_size);
    widen<V>(static_cast<const uint16_t*>(f.kt[b]), kb, tile);
    if (hi > lo)
      widen<V>(static_cast<const uint16_t*>(f.v[b]) + lo * f.head_dim, vb + lo * f.head_dim,
               (hi - lo) * f.head_dim);
    wide.kt[b] = kb;
    wide.v[b] = vb;
  }
  fold_elems<V>(wide, FmaDots<V, float>{});
}

}  // namespace strata::attention::simd
