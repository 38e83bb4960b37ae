// The attention tile folds: the scalar reference against a plain softmax in double, and
// the AVX2 / AVX-512 folds against the reference, over several tiles (so the running
// max, sum and accumulator are rescaled), partial tiles, one to kMaxFoldBlocks blocks per
// fold, causal prefill groups, head dimensions with and without SIMD tails, block sizes
// below, at and above a vector, and 1-128 query rows; f32, f16, bf16 tiles and q8_0 / q4_0
// keys scored as stored (q8_keys / q4_keys, with bf16 values).
#include "attention/tile_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/fp16.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"
#include "kv/tile_layout.h"

namespace strata::attention {
namespace {

struct Case {
  int64_t hd, bs, n_q, n_keys;
};

std::vector<float> normals(std::mt19937& rng, int64_t n, float sigma) {
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = normal(rng);
  return v;
}

// How run() cuts the keys into folds.
struct Folding {
  int blocks = 1;     // blocks per fold (segments of blocks * bs keys from key 0)
  bool split = true;  // fold the first block as [0, 1) and [1, ...), as streaming heads do
  int64_t causal =
      0;  // > 0: rows form tokens of `causal` rows; token t sees n_keys - T + 1 + t keys
};

// Attention of n_q rows over n_keys keys, folded with `fold`; keys are laid out in blocks
// of bs as the cache holds them (keys transposed per block), unwritten slots holding 7.
std::vector<float> run(void (*fold)(const FoldTile&), const Case& c, const std::vector<float>& q,
                       const std::vector<float>& keys, const std::vector<float>& vals,
                       TileElem elem = TileElem::f32, Folding how = {}) {
  const int64_t n_blocks = (c.n_keys + c.bs - 1) / c.bs;
  const bool quant_keys = elem == TileElem::q8_keys || elem == TileElem::q4_keys;
  std::vector<float> kt(static_cast<size_t>(n_blocks * c.bs * c.hd), 7.0f);
  std::vector<float> vt(kt.size(), 7.0f);
  for (int64_t j = 0; j < c.n_keys; ++j) {
    const int64_t b = j / c.bs, s = j % c.bs;
    for (int64_t d = 0; d < c.hd; ++d) {
      kt[static_cast<size_t>(b * c.bs * c.hd + d * c.bs + s)] =
          keys[static_cast<size_t>(j * c.hd + d)];
      vt[static_cast<size_t>(b * c.bs * c.hd + s * c.hd + d)] =
          vals[static_cast<size_t>(j * c.hd + d)];
    }
  }
  // The same tiles as halves, or as bf16 pairs (kv/tile_layout.h).
  std::vector<uint16_t> kt16(kt.size()), vt16(vt.size());
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t s = 0; s < c.bs; ++s) {
      for (int64_t d = 0; d < c.hd; ++d) {
        const auto base = static_cast<size_t>(b * c.bs * c.hd);
        const float kv = kt[base + static_cast<size_t>(kv_layout::key_index(d, s, c.bs))];
        const float vv = vt[base + static_cast<size_t>(kv_layout::value_index(s, d, c.hd))];
        if (elem == TileElem::bf16 || quant_keys) {
          kt16[base + static_cast<size_t>(kv_layout::bf16_key_index(d, s, c.bs))] =
              fp32_to_bf16(kv);
          vt16[base + static_cast<size_t>(kv_layout::bf16_value_index(s, d, c.hd))] =
              fp32_to_bf16(vv);
        } else {
          kt16[base + static_cast<size_t>(kv_layout::key_index(d, s, c.bs))] = fp32_to_fp16(kv);
          vt16[base + static_cast<size_t>(kv_layout::value_index(s, d, c.hd))] = fp32_to_fp16(vv);
        }
      }
    }
  }
  // q8_keys / q4_keys: the keys quantized into q8_0 / q4_0 tiles (kv/kv_quant.h), the
  // values bf16 pairs (made above), the query quantized by quantize_query_q8.
  const DType key_type = elem == TileElem::q4_keys ? DType::Q4_0 : DType::Q8_0;
  const int64_t q8_tile = c.bs * static_cast<int64_t>(kv_quant::row_bytes(key_type, c.hd));
  std::vector<uint8_t> kq8;
  std::vector<int8_t> q8(q.size());
  const int64_t n_groups = quant_keys ? c.hd / kv_quant::group_size(c.hd) : 0;
  std::vector<float> q8_scale(static_cast<size_t>(c.n_q * n_groups));
  std::vector<int32_t> q8_sum(q8_scale.size());
  if (quant_keys) {
    kq8.assign(static_cast<size_t>(n_blocks * q8_tile), 0);
    std::vector<float> key(static_cast<size_t>(c.hd));
    for (int64_t b = 0; b < n_blocks; ++b) {
      for (int64_t s = 0; s < c.bs; ++s) {
        for (int64_t d = 0; d < c.hd; ++d)
          key[static_cast<size_t>(d)] =
              kt[static_cast<size_t>(b * c.bs * c.hd + kv_layout::key_index(d, s, c.bs))];
        kv_quant::store(key_type, kq8.data() + b * q8_tile, true, key.data(), s, c.bs, c.hd);
      }
    }
    quantize_query_q8(q.data(), c.n_q, c.hd, q8.data(), q8_scale.data(), q8_sum.data());
  }
  const bool halves = elem != TileElem::f32;
  std::vector<float> mx(static_cast<size_t>(c.n_q), -INFINITY),
      sum(static_cast<size_t>(c.n_q), 0.0f);
  std::vector<float> acc(static_cast<size_t>(c.n_q * c.hd), 0.0f);
  std::vector<float> p(static_cast<size_t>(c.n_q * fold_scratch_row(c.bs)));
  const int64_t n_tokens = how.causal > 0 ? c.n_q / how.causal : 1;
  const int64_t first_ctx = c.n_keys - n_tokens + 1;  // the first token's keys
  // Folds keys [j0, j1) (of the whole axis) for rows from token i0 on.
  auto fold_range = [&](int64_t j0, int64_t j1, int64_t i0) {
    const int64_t b0 = j0 / c.bs;
    FoldTile t;
    t.n_blocks = static_cast<int>((j1 - 1) / c.bs - b0 + 1);
    for (int b = 0; b < t.n_blocks; ++b) {
      const int64_t off = (b0 + b) * c.bs * c.hd;
      t.kt[b] = halves ? static_cast<const void*>(kt16.data() + off) : kt.data() + off;
      if (quant_keys) t.kt[b] = kq8.data() + (b0 + b) * q8_tile;
      t.v[b] = halves ? static_cast<const void*>(vt16.data() + off) : vt.data() + off;
    }
    // The following blocks as prefetch hints, as paged attention gives them (they must not
    // change the result).
    for (int64_t nb = b0 + t.n_blocks; nb < std::min(n_blocks, b0 + t.n_blocks + kMaxFoldBlocks);
         ++nb) {
      const int64_t off = nb * c.bs * c.hd;
      t.next[t.n_next++] = halves ? static_cast<const void*>(kt16.data() + off) : kt.data() + off;
      t.next[t.n_next++] = halves ? static_cast<const void*>(vt16.data() + off) : vt.data() + off;
    }
    t.next_bytes = c.bs * c.hd * (halves ? 2 : 4);
    const int64_t r0 = how.causal > 0 ? i0 * how.causal : 0;
    t.q = q.data() + r0 * c.hd;
    if (quant_keys)
      t.q8 = QueryQ8{q8.data(), q8_scale.data(), q8_sum.data()}.rows_from(r0, c.hd, n_groups);
    t.n_q = c.n_q - r0;
    t.elem = elem;
    t.block_size = c.bs;
    t.head_dim = c.hd;
    t.j0 = j0 - b0 * c.bs;
    t.j1 = j1 - b0 * c.bs;
    const int64_t first_keys = first_ctx + i0 - j0;
    if (how.causal > 0 && first_keys < j1 - j0) {
      t.rows_per_token = how.causal;
      t.first_row_keys = first_keys;
    }
    t.scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    t.max = mx.data() + r0;
    t.sum = sum.data() + r0;
    t.acc = acc.data() + r0 * c.hd;
    t.p = p.data();
    fold(t);
  };
  const int64_t seg = how.blocks * c.bs;
  for (int64_t s0 = 0; s0 < c.n_keys; s0 += seg) {
    const int64_t s1 = std::min(s0 + seg, c.n_keys);
    const int64_t i0 = std::max<int64_t>(0, s0 - first_ctx + 1);  // tokens that see key s0
    if (s0 == 0 && how.split && s1 > 1) {
      fold_range(0, 1, i0);
      fold_range(1, s1, std::max<int64_t>(0, 1 - first_ctx + 1));
    } else {
      fold_range(s0, s1, i0);
    }
  }
  for (int64_t r = 0; r < c.n_q; ++r) {
    for (int64_t d = 0; d < c.hd; ++d)
      acc[static_cast<size_t>(r * c.hd + d)] /= sum[static_cast<size_t>(r)];
  }
  return acc;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> cs = {
      {4, 16, 1, 1},
      {4, 16, 2, 37},
      {8, 16, 8, 16},
      {36, 16, 3, 50},
      {64, 16, 8, 200},
      {64, 16, 4, 33},
      {64, 8, 5, 40},
      {64, 32, 9, 70},
      {72, 16, 6, 100},
      {128, 16, 8, 64},
      {128, 24, 2, 49},
      {17, 5, 7, 23},
      // Prefill-sized row counts: the AVX-512 fold's 16-row softmax and f16 tile widening,
      // with remainders and more rows than one correction group (64).
      {64, 16, 16, 100},
      {64, 16, 33, 70},
      {64, 16, 64, 200},
      {17, 5, 20, 23},
      {64, 32, 70, 90},
      {64, 16, 128, 40},  // a 16-token prefill group at llama-1b's GQA ratio
  };
  return cs;
}

// Softmax attention of each row of q over all keys, in double.
std::vector<double> double_softmax(const Case& c, const std::vector<float>& q,
                                   const std::vector<float>& k, const std::vector<float>& v) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.hd));
  std::vector<double> out(static_cast<size_t>(c.n_q * c.hd));
  for (int64_t r = 0; r < c.n_q; ++r) {
    std::vector<double> s(static_cast<size_t>(c.n_keys));
    double m = -INFINITY, total = 0;
    for (int64_t j = 0; j < c.n_keys; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < c.hd; ++d)
        dot += static_cast<double>(q[r * c.hd + d]) * k[j * c.hd + d];
      s[j] = dot * scale;
      m = std::max(m, s[j]);
    }
    for (auto& x : s) total += (x = std::exp(x - m));
    for (int64_t d = 0; d < c.hd; ++d) {
      double o = 0;
      for (int64_t j = 0; j < c.n_keys; ++j) o += s[j] * v[j * c.hd + d];
      out[static_cast<size_t>(r * c.hd + d)] = o / total;
    }
  }
  return out;
}

TEST(TileKernels, ReferenceMatchesDoubleSoftmax) {
  std::mt19937 rng(3);
  for (const Case& c : cases()) {
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f),
               v = normals(rng, c.n_keys * c.hd, 1.0f);
    const std::vector<float> out = run(reference_tile_kernels().fold, c, q, k, v);
    const std::vector<double> want = double_softmax(c, q, k, v);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(out[i], want[i], 2e-5) << "hd " << c.hd << " bs " << c.bs << " element " << i;
    }
  }
}

const Folding kFoldings[] = {{1, true, 0}, {kMaxFoldBlocks, false, 0}, {3, true, 0}};

// The element types a case can be stored as (bf16 pairs need even head_dim and block size).
std::vector<TileElem> elems(const Case& c) {
  std::vector<TileElem> e = {TileElem::f32, TileElem::f16};
  if (c.hd % 2 == 0 && c.bs % 2 == 0) e.push_back(TileElem::bf16);
  if (c.hd % 16 == 0 && c.bs % 2 == 0) {
    e.push_back(TileElem::q8_keys);
    e.push_back(TileElem::q4_keys);
  }
  return e;
}

// Fast folds against the reference. With bf16 tiles both round each softmax weight to
// bf16, and a weight whose exp differs by an ulp between them can round the other way
// (2^-8 relative): the bound allows that; the exact tests below pin the arithmetic.
float tolerance(TileElem e) {
  return e == TileElem::f32 || e == TileElem::f16 ? 1e-5f : 2e-3f;
}

void expect_matches_reference(void (*fold)(const FoldTile&), const char* name) {
  std::mt19937 rng(7);
  for (const Case& c : cases()) {
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f),
               v = normals(rng, c.n_keys * c.hd, 1.0f);
    for (const Folding& how : kFoldings) {
      for (TileElem e : elems(c)) {
        const std::vector<float> ref = run(reference_tile_kernels().fold, c, q, k, v, e, how);
        const std::vector<float> fast = run(fold, c, q, k, v, e, how);
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(fast[i], ref[i], tolerance(e))
              << name << " hd " << c.hd << " bs " << c.bs << " n_q " << c.n_q << " keys "
              << c.n_keys << " elem " << int(e) << " blocks " << how.blocks << " element " << i;
        }
      }
      // A row's result does not depend on the other rows of the call, bit for bit: the
      // many-row paths (kScoreRows rows per score pass, 16 rows per softmax pass, f16
      // tiles widened once) give each row what the one-row path gives it.
      for (TileElem e : elems(c)) {
        if (c.n_q == 1) break;
        const std::vector<float> fast = run(fold, c, q, k, v, e, how);
        Case one = c;
        one.n_q = 1;
        const int64_t step =
            c.n_q > 9 ? 7 : c.n_q - 1;  // some rows of big cases, the last of small
        for (int64_t r = c.n_q - 1; r >= 0; r -= step) {
          const std::vector<float> q_row(q.begin() + r * c.hd, q.begin() + (r + 1) * c.hd);
          const std::vector<float> alone = run(fold, one, q_row, k, v, e, how);
          for (int64_t d = 0; d < c.hd; ++d) {
            ASSERT_EQ(alone[d], fast[r * c.hd + d])
                << name << " hd " << c.hd << " n_q " << c.n_q << " elem " << int(e) << " blocks "
                << how.blocks << " row " << r << " alone";
          }
        }
      }
    }
  }
}

// A prefill group's causal folds (every token sees keys up to its own position, rows of
// one token adjacent) give each token's rows the bits that folding that token alone over
// its own context gives them, as decode does: against the reference to tolerance, and
// token by token bit for bit.
void expect_causal_matches_alone(void (*fold)(const FoldTile&), const char* name) {
  std::mt19937 rng(11);
  struct CausalCase {
    Case c;
    int64_t rows_per_token;
  };
  const CausalCase cases[] = {
      {{64, 16, 128, 100}, 8},  // llama-1b: 16 tokens x 8 heads, keys ending mid-segment
      {{64, 16, 128, 16}, 8},   // the first 16 tokens of a prompt: keys 1..16
      {{64, 16, 48, 70}, 6},    // 6 heads per token: 4-row groups straddle tokens
      {{17, 5, 21, 23}, 3},
      {{64, 32, 40, 131}, 4},
      // A token's rows beyond the bf16 folds' query buffers: sliced row by row.
      {{128, 16, 130, 40}, 65},
  };
  for (const auto& [c, rpt] : cases) {
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f),
               v = normals(rng, c.n_keys * c.hd, 1.0f);
    const int64_t n_tokens = c.n_q / rpt;
    for (TileElem e : elems(c)) {
      for (int blocks : {1, kMaxFoldBlocks}) {
        const Folding how{blocks, false, rpt};
        const std::vector<float> ref = run(reference_tile_kernels().fold, c, q, k, v, e, how);
        const std::vector<float> group = run(fold, c, q, k, v, e, how);
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_NEAR(group[i], ref[i], tolerance(e))
              << name << " causal n_q " << c.n_q << " elem " << int(e) << " blocks " << blocks
              << " element " << i;
        }
        for (int64_t t = 0; t < n_tokens; ++t) {
          Case alone_case = c;
          alone_case.n_q = rpt;
          alone_case.n_keys = c.n_keys - n_tokens + 1 + t;
          const std::vector<float> q_tok(q.begin() + t * rpt * c.hd,
                                         q.begin() + (t + 1) * rpt * c.hd);
          const std::vector<float> alone =
              run(fold, alone_case, q_tok, k, v, e, Folding{blocks, false, 0});
          for (int64_t i = 0; i < rpt * c.hd; ++i) {
            ASSERT_EQ(alone[static_cast<size_t>(i)], group[static_cast<size_t>(t * rpt * c.hd + i)])
                << name << " causal n_q " << c.n_q << " elem " << int(e) << " blocks " << blocks
                << " token " << t;
          }
        }
      }
    }
  }
}

// bf16 folds on inputs where every path's arithmetic is exact, so all must give the same
// bits: (1) zero queries weigh every key by exactly 1, so a row's output is the mean of its
// values (odd multiples of 1/8, whose sums are exact in any order); (2) a query 32 x key t
// (exact in bf16) scores key t at least 80 above every other key, so the others' weights
// underflow to nothing and the output is value t. A value pair split wrongly, a key
// dropped or added, or dimension pairs mixed up in the scores would all show.
void expect_bf16_exact(void (*fold)(const FoldTile&), const char* name) {
  std::mt19937 rng(13);
  struct ExactCase {
    Case c;
    Folding how;
  };
  const ExactCase cases[] = {
      {{64, 16, 8, 200}, {1, true, 0}},
      {{64, 16, 8, 200}, {kMaxFoldBlocks, false, 0}},
      {{64, 16, 128, 40}, {kMaxFoldBlocks, true, 0}},
      {{64, 16, 33, 71}, {3, true, 0}},
      {{64, 32, 9, 70}, {kMaxFoldBlocks, false, 0}},
      {{64, 16, 128, 100}, {kMaxFoldBlocks, false, 8}},
      {{64, 16, 48, 71}, {kMaxFoldBlocks, false, 6}},
      {{64, 16, 128, 16}, {1, false, 8}},
  };
  std::uniform_int_distribution<int> eighths(-16, 15);  // odd eighths: never 0
  for (const auto& [c, how] : cases) {
    const int64_t rpt = how.causal > 0 ? how.causal : c.n_q;
    const int64_t n_tokens = c.n_q / rpt;
    auto visible = [&](int64_t r) {
      return how.causal > 0 ? c.n_keys - n_tokens + 1 + r / rpt : c.n_keys;
    };
    std::vector<float> k = normals(rng, c.n_keys * c.hd, 1.0f),
                       v(static_cast<size_t>(c.n_keys * c.hd));
    for (auto& x : k) x = bf16_to_fp32(fp32_to_bf16(x));
    for (auto& x : v) x = static_cast<float>(2 * eighths(rng) + 1) / 8.0f;
    // (1) uniform weights
    const std::vector<float> zero(static_cast<size_t>(c.n_q * c.hd), 0.0f);
    const std::vector<float> mean = run(fold, c, zero, k, v, TileElem::bf16, how);
    for (int64_t r = 0; r < c.n_q; ++r) {
      for (int64_t d = 0; d < c.hd; ++d) {
        double total = 0;
        for (int64_t j = 0; j < visible(r); ++j) total += v[static_cast<size_t>(j * c.hd + d)];
        const float want = static_cast<float>(total) / static_cast<float>(visible(r));
        ASSERT_EQ(mean[static_cast<size_t>(r * c.hd + d)], want)
            << name << " uniform n_q " << c.n_q << " keys " << c.n_keys << " row " << r << " d "
            << d;
      }
    }
    // (2) one key per row
    std::vector<float> q(static_cast<size_t>(c.n_q * c.hd));
    std::vector<int64_t> target(static_cast<size_t>(c.n_q));
    for (int64_t r = 0; r < c.n_q; ++r) {
      target[static_cast<size_t>(r)] = (r * 37 + 5) % visible(r);
      for (int64_t d = 0; d < c.hd; ++d) {
        q[static_cast<size_t>(r * c.hd + d)] =
            32.0f * k[static_cast<size_t>(target[static_cast<size_t>(r)] * c.hd + d)];
      }
    }
    const std::vector<float> picked = run(fold, c, q, k, v, TileElem::bf16, how);
    for (int64_t r = 0; r < c.n_q; ++r) {
      for (int64_t d = 0; d < c.hd; ++d) {
        ASSERT_EQ(picked[static_cast<size_t>(r * c.hd + d)],
                  v[static_cast<size_t>(target[static_cast<size_t>(r)] * c.hd + d)])
            << name << " one key n_q " << c.n_q << " keys " << c.n_keys << " row " << r << " d "
            << d;
      }
    }
  }
}

TEST(TileKernels, ReferenceBf16MatchesDoubleSoftmaxOfRoundedInputs) {
  std::mt19937 rng(17);
  for (const Case& c : cases()) {
    if (c.hd % 2 != 0 || c.bs % 2 != 0) continue;
    auto rounded = [](std::vector<float> x) {
      for (auto& e : x) e = bf16_to_fp32(fp32_to_bf16(e));
      return x;
    };
    const auto q = rounded(normals(rng, c.n_q * c.hd, 2.0f)),
               k = rounded(normals(rng, c.n_keys * c.hd, 1.0f)),
               v = rounded(normals(rng, c.n_keys * c.hd, 1.0f));
    const std::vector<float> out = run(reference_tile_kernels().fold, c, q, k, v, TileElem::bf16);
    const std::vector<double> want = double_softmax(c, q, k, v);
    for (size_t i = 0; i < want.size(); ++i) {
      // The weights' rounding to bf16 (2^-9 relative each) is the only loss.
      ASSERT_NEAR(out[i], want[i], 8e-3) << "hd " << c.hd << " bs " << c.bs << " element " << i;
    }
  }
}

// q8_keys: the reference against softmax in double of the quantized query and keys (each
// group's integers times its scale) and bf16 values; only the weights' rounding is lost.
TEST(TileKernels, ReferenceQ8KeysMatchesDoubleSoftmaxOfQuantizedInputs) {
  std::mt19937 rng(19);
  // Per group of `group` elements: round(x * 127 / max|x|) times max|x| / 127, with the
  // max and the scale as kv_quant::store_q8_0 (f16 scale) or quantize_query_q8 (float).
  auto quantized = [](std::vector<float> x, int64_t group, bool f16_scale) {
    for (size_t g0 = 0; g0 < x.size(); g0 += static_cast<size_t>(group)) {
      float amax = 0;
      for (int64_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[g0 + size_t(i)]));
      const float s = f16_scale ? fp16_to_fp32(fp32_to_fp16(amax / 127.0f)) : amax / 127.0f;
      for (int64_t i = 0; i < group; ++i) {
        float& e = x[g0 + size_t(i)];
        e = s > 0 ? std::nearbyint(f16_scale ? e * (1.0f / s) : e * (127.0f / amax)) * s : 0.0f;
      }
    }
    return x;
  };
  for (const Case& c : cases()) {
    if (c.hd % 16 != 0 || c.bs % 2 != 0) continue;
    const int64_t group = kv_quant::group_size(c.hd);
    const auto q = normals(rng, c.n_q * c.hd, 2.0f), k = normals(rng, c.n_keys * c.hd, 1.0f);
    auto v = normals(rng, c.n_keys * c.hd, 1.0f);
    for (auto& e : v) e = bf16_to_fp32(fp32_to_bf16(e));
    const std::vector<float> out =
        run(reference_tile_kernels().fold, c, q, k, v, TileElem::q8_keys);
    const std::vector<double> want =
        double_softmax(c, quantized(q, group, false), quantized(k, group, true), v);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(out[i], want[i], 8e-3) << "hd " << c.hd << " bs " << c.bs << " element " << i;
    }
  }
}

TEST(TileKernels, Bf16ExactCases) {
  expect_bf16_exact(reference_tile_kernels().fold, "scalar");
  if (kernels::cpu_has_avx2_fma()) expect_bf16_exact(avx2::fold, "avx2");
  if (kernels::cpu_kernel_isa() >= kernels::KernelIsa::avx512_vnni)
    expect_bf16_exact(avx512::fold, "avx512");
  if (kernels::cpu_has_avx512_bf16()) expect_bf16_exact(avx512bf16::fold, "avx512-bf16");
}

TEST(TileKernels, ReferenceCausalMatchesAlone) {
  expect_causal_matches_alone(reference_tile_kernels().fold, "scalar");
}

TEST(TileKernels, Avx2MatchesReference) {
  if (!kernels::cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2 on this CPU (or STRATA_NO_AVX2)";
  expect_matches_reference(avx2::fold, "avx2");
  expect_causal_matches_alone(avx2::fold, "avx2");
}

TEST(TileKernels, Avx512MatchesReference) {
  if (kernels::cpu_kernel_isa() < kernels::KernelIsa::avx512_vnni) {
    GTEST_SKIP() << "no AVX-512 on this CPU (or STRATA_NO_AVX512)";
  }
  expect_matches_reference(avx512::fold, "avx512");
  expect_causal_matches_alone(avx512::fold, "avx512");
}

TEST(TileKernels, Avx512Bf16MatchesReference) {
  if (!kernels::cpu_has_avx512_bf16())
    GTEST_SKIP() << "no AVX512_BF16 on this CPU (or STRATA_NO_AVX512*)";
  expect_matches_reference(avx512bf16::fold, "avx512-bf16");
  expect_causal_matches_alone(avx512bf16::fold, "avx512-bf16");
}

}  // namespace
}  // namespace strata::attention
