#include "golden/reference_model.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gguf/gguf.h"
#include "kernels/quant/traits.h"
#include "model/config.h"

namespace strata::testing {
namespace {

using Vec = std::vector<float>;

struct Tensor {
  std::vector<int64_t> ne;
  Vec v;
  // Row r (of the flattened matrices) of length ne[0].
  const float* row(int64_t r) const { return v.data() + r * ne[0]; }
};

class Ref {
 public:
  explicit Ref(const std::string& path) : f_(gguf::GgufFile::open(path)), c_(config_from_gguf(f_)) {
    c_.n_vocab = f_.tensor("token_embd.weight").ne[1];
  }

  std::vector<Vec> run(const std::vector<int32_t>& tokens);

 private:
  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }
  Tensor get(const std::string& name) const {
    const auto& t = f_.tensor(name);
    Tensor out;
    out.ne = t.ne;
    out.v.resize(static_cast<size_t>(t.n_elements));
    kernels::reference_type_traits(t.type).to_float(f_.tensor_data(t), out.v.data(),
                                                    static_cast<int64_t>(t.n_elements));
    return out;
  }
  // y = W x for a matrix [cols, rows] (row r of W at r*cols).
  static Vec mul(const Tensor& w, const float* x, int64_t matrix = 0) {
    const int64_t cols = w.ne[0], rows = w.ne[1];
    Vec y(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      const float* wr = w.row(matrix * rows + r);
      for (int64_t i = 0; i < cols; ++i) s += static_cast<double>(wr[i]) * x[i];
      y[static_cast<size_t>(r)] = static_cast<float>(s);
    }
    return y;
  }
  Vec rmsnorm(const float* x, int64_t n, const Tensor& w) const {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + c_.rms_eps);
    Vec y(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      y[static_cast<size_t>(i)] = static_cast<float>(x[i] * inv * w.v[static_cast<size_t>(i)]);
    return y;
  }
  // Rotates dims [0, rope_dim) of x at position pos.
  // HF's YaRN (modeling_rope_utils / DeepSeek's yarn rotary embedding): the pair's
  // frequency interpolated by the factor below the correction range, kept above it.
  double yarn_inv_freq(int64_t i, double extrapolated) const {
    if (c_.yarn.factor <= 0.0f) return extrapolated;
    const double dim = static_cast<double>(c_.rope_dim), base = c_.rope_base;
    const auto correction = [&](double rotations) {
      return dim *
             std::log(static_cast<double>(c_.yarn.original_context) / (rotations * 2 * M_PI)) /
             (2 * std::log(base));
    };
    const double low = std::max(0.0, std::floor(correction(c_.yarn.beta_fast)));
    const double high = std::min(dim - 1, std::ceil(correction(c_.yarn.beta_slow)));
    const double ramp =
        std::clamp((static_cast<double>(i) - low) / std::max(0.001, high - low), 0.0, 1.0);
    const double extrapolation = 1.0 - ramp;  // HF's inv_freq_extrapolation_factor
    return extrapolated / c_.yarn.factor * (1 - extrapolation) + extrapolated * extrapolation;
  }
  // cos/sin scale: HF's attention_factor 0.1 ln(factor) + 1, which DeepSeek's mscale ==
  // mscale_all_dim cancels (it scales the softmax instead).
  double yarn_magnitude() const {
    if (c_.yarn.factor <= 0.0f || c_.mla.enabled()) return 1.0;
    return 0.1 * std::log(static_cast<double>(c_.yarn.factor)) + 1.0;
  }
  void rope(float* x, int64_t pos) const {
    const int64_t n = c_.rope_dim;
    const double mag = yarn_magnitude();
    for (int64_t i = 0; i < n / 2; ++i) {
      const double theta =
          static_cast<double>(pos) / c_.rope_linear_scale *
          yarn_inv_freq(i, std::pow(static_cast<double>(c_.rope_base),
                                    -2.0 * static_cast<double>(i) / static_cast<double>(n)));
      const int64_t a = c_.rope_layout == RopeLayout::kNeox ? i : 2 * i;
      const int64_t b = c_.rope_layout == RopeLayout::kNeox ? i + n / 2 : 2 * i + 1;
      const double x0 = x[a], x1 = x[b];
      x[a] = static_cast<float>(mag * (x0 * std::cos(theta) - x1 * std::sin(theta)));
      x[b] = static_cast<float>(mag * (x0 * std::sin(theta) + x1 * std::cos(theta)));
    }
  }
  static Vec swiglu_ffn(const Tensor& gate, const Tensor& up, const Tensor& down, const Vec& x,
                        int64_t matrix = 0) {
    Vec g = mul(gate, x.data(), matrix), u = mul(up, x.data(), matrix);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    return mul(down, g.data(), matrix);
  }
  // softmax(q.K^T * scale) V over positions 0..t for each head.
  static Vec attend(const std::vector<Vec>& q, const std::vector<Vec>& k, const std::vector<Vec>& v,
                    int64_t n_heads, int64_t n_kv, int64_t dk, int64_t dv, float scale);
  Vec attention(int64_t l, const std::vector<Vec>& xs);
  Vec mla(int64_t l, const std::vector<Vec>& xs);
  Vec ffn(int64_t l, const Vec& x);

  gguf::GgufFile f_;
  ModelConfig c_;
};

Vec Ref::attend(const std::vector<Vec>& q, const std::vector<Vec>& k, const std::vector<Vec>& v,
                int64_t H, int64_t n_kv, int64_t dk, int64_t dv, float scale) {
  const auto T = static_cast<int64_t>(q.size());
  Vec out(static_cast<size_t>(T * H * dv));
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / n_kv);
      std::vector<double> s(static_cast<size_t>(t + 1));
      for (int64_t j = 0; j <= t; ++j) {
        double d = 0;
        for (int64_t i = 0; i < dk; ++i)
          d += static_cast<double>(q[static_cast<size_t>(t)][static_cast<size_t>(h * dk + i)]) *
               k[static_cast<size_t>(j)][static_cast<size_t>(g * dk + i)];
        s[static_cast<size_t>(j)] = d * scale;
      }
      const double m = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (auto& x : s) sum += (x = std::exp(x - m));
      for (int64_t i = 0; i < dv; ++i) {
        double o = 0;
        for (int64_t j = 0; j <= t; ++j)
          o += s[static_cast<size_t>(j)] *
               v[static_cast<size_t>(j)][static_cast<size_t>(g * dv + i)];
        out[static_cast<size_t>((t * H + h) * dv + i)] = static_cast<float>(o / sum);
      }
    }
  }
  return out;
}

// Multi-head attention with GQA, optional biases and Q/K norms; returns (T, dim) after wo.
Vec Ref::attention(int64_t l, const std::vector<Vec>& xs) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const Tensor wq = get(p + "attn_q.weight"), wk = get(p + "attn_k.weight"),
               wv = get(p + "attn_v.weight"), wo = get(p + "attn_output.weight");
  const int64_t H = c_.n_heads, G = c_.n_kv_heads, hd = c_.head_dim;
  std::vector<Vec> q, k, v;
  for (size_t t = 0; t < xs.size(); ++t) {
    Vec qt = mul(wq, xs[t].data()), kt = mul(wk, xs[t].data()), vt = mul(wv, xs[t].data());
    if (has(p + "attn_q.bias")) {
      const Tensor bq = get(p + "attn_q.bias"), bk = get(p + "attn_k.bias"),
                   bv = get(p + "attn_v.bias");
      for (size_t i = 0; i < qt.size(); ++i) qt[i] += bq.v[i];
      for (size_t i = 0; i < kt.size(); ++i) kt[i] += bk.v[i], vt[i] += bv.v[i];
    }
    if (has(p + "attn_q_norm.weight")) {
      const Tensor qn = get(p + "attn_q_norm.weight"), kn = get(p + "attn_k_norm.weight");
      for (int64_t h = 0; h < H; ++h) {
        const Vec r = rmsnorm(qt.data() + h * hd, hd, qn);
        std::copy(r.begin(), r.end(), qt.begin() + h * hd);
      }
      for (int64_t h = 0; h < G; ++h) {
        const Vec r = rmsnorm(kt.data() + h * hd, hd, kn);
        std::copy(r.begin(), r.end(), kt.begin() + h * hd);
      }
    }
    for (int64_t h = 0; h < H; ++h) rope(qt.data() + h * hd, static_cast<int64_t>(t));
    for (int64_t h = 0; h < G; ++h) rope(kt.data() + h * hd, static_cast<int64_t>(t));
    q.push_back(qt), k.push_back(kt), v.push_back(vt);
  }
  const Vec att = attend(q, k, v, H, G, hd, hd, 1.0f / std::sqrt(static_cast<float>(hd)));
  Vec out;
  for (size_t t = 0; t < xs.size(); ++t) {
    const Vec o = mul(wo, att.data() + t * static_cast<size_t>(H * hd));
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

// MLA, decompressed: every head gets its own K = [W_kb^T c, k_pe] and V = W_vb c.
Vec Ref::mla(int64_t l, const std::vector<Vec>& xs) {
  const std::string p = "blk." + std::to_string(l) + ".";
  const auto& m = c_.mla;
  const int64_t H = c_.n_heads, L = m.kv_lora_rank, R = c_.rope_dim, nope = m.qk_nope_dim,
                dv = m.v_head_dim, dk = nope + R;
  const Tensor kv_a = get(p + "attn_kv_a_mqa.weight"), kv_norm = get(p + "attn_kv_a_norm.weight");
  const Tensor wo = get(p + "attn_output.weight");
  // kb[h][d][r]: k_nope_h[d] = sum_r kb * c[r]; vb[h][e][r]: v_h[e] = sum_r vb * c[r].
  std::vector<float> kb(static_cast<size_t>(H * nope * L)), vb(static_cast<size_t>(H * dv * L));
  if (has(p + "attn_k_b.weight")) {
    const Tensor k_b = get(p + "attn_k_b.weight"),
                 v_b = get(p + "attn_v_b.weight");  // [nope, L, H], [L, dv, H]
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < L; ++r)
        for (int64_t d = 0; d < nope; ++d)
          kb[static_cast<size_t>((h * nope + d) * L + r)] =
              k_b.v[static_cast<size_t>((h * L + r) * nope + d)];
    vb = v_b.v;
  } else {
    const Tensor kv_b = get(p + "attn_kv_b.weight");  // [L, H*(nope+dv)]
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t d = 0; d < nope + dv; ++d) {
        const float* src = kv_b.row(h * (nope + dv) + d);
        float* dst = d < nope ? &kb[static_cast<size_t>((h * nope + d) * L)]
                              : &vb[static_cast<size_t>((h * dv + d - nope) * L)];
        std::copy(src, src + L, dst);
      }
    }
  }
  std::vector<Vec> q, k, v;
  for (size_t t = 0; t < xs.size(); ++t) {
    Vec qt;
    if (has(p + "attn_q_a.weight")) {
      const Vec qa = mul(get(p + "attn_q_a.weight"), xs[t].data());
      const Vec qn =
          rmsnorm(qa.data(), static_cast<int64_t>(qa.size()), get(p + "attn_q_a_norm.weight"));
      qt = mul(get(p + "attn_q_b.weight"), qn.data());
    } else {
      qt = mul(get(p + "attn_q.weight"), xs[t].data());
    }
    for (int64_t h = 0; h < H; ++h) rope(qt.data() + h * dk + nope, static_cast<int64_t>(t));
    Vec ckv = mul(kv_a, xs[t].data());
    const Vec c = rmsnorm(ckv.data(), L, kv_norm);
    rope(ckv.data() + L, static_cast<int64_t>(t));
    Vec kt(static_cast<size_t>(H * dk)), vt(static_cast<size_t>(H * dv));
    for (int64_t h = 0; h < H; ++h) {
      for (int64_t d = 0; d < nope; ++d) {
        double s = 0;
        for (int64_t r = 0; r < L; ++r)
          s += static_cast<double>(kb[static_cast<size_t>((h * nope + d) * L + r)]) *
               c[static_cast<size_t>(r)];
        kt[static_cast<size_t>(h * dk + d)] = static_cast<float>(s);
      }
      for (int64_t d = 0; d < R; ++d)
        kt[static_cast<size_t>(h * dk + nope + d)] = ckv[static_cast<size_t>(L + d)];
      for (int64_t e = 0; e < dv; ++e) {
        double s = 0;
        for (int64_t r = 0; r < L; ++r)
          s += static_cast<double>(vb[static_cast<size_t>((h * dv + e) * L + r)]) *
               c[static_cast<size_t>(r)];
        vt[static_cast<size_t>(h * dv + e)] = static_cast<float>(s);
      }
    }
    q.push_back(qt), k.push_back(kt), v.push_back(vt);
  }
  // DeepSeek: softmax_scale = mscale(factor, mscale_all_dim)^2 / sqrt(q_head_dim).
  double mscale = 1.0;
  if (c_.yarn.factor > 0.0f) mscale = 0.1 * c_.yarn.log_multiplier * std::log(c_.yarn.factor) + 1.0;
  const Vec att = attend(q, k, v, H, H, dk, dv,
                         static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(dk))));
  Vec out;
  for (size_t t = 0; t < xs.size(); ++t) {
    const Vec o = mul(wo, att.data() + t * static_cast<size_t>(H * dv));
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

Vec Ref::ffn(int64_t l, const Vec& x) {
  const std::string p = "blk." + std::to_string(l) + ".";
  if (!has(p + "ffn_gate_inp.weight"))
    return swiglu_ffn(get(p + "ffn_gate.weight"), get(p + "ffn_up.weight"),
                      get(p + "ffn_down.weight"), x);
  const auto& m = c_.moe;
  const Vec logits = mul(get(p + "ffn_gate_inp.weight"), x.data());
  Vec probs(logits.size());
  if (m.gating == ExpertGating::kSoftmax) {
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (size_t e = 0; e < probs.size(); ++e) sum += (probs[e] = std::exp(logits[e] - mx));
    for (auto& pr : probs) pr = static_cast<float>(pr / sum);
  } else {
    for (size_t e = 0; e < probs.size(); ++e) probs[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }
  std::vector<int> order(probs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return probs[static_cast<size_t>(a)] > probs[static_cast<size_t>(b)];
  });
  order.resize(static_cast<size_t>(m.n_experts_used));
  double wsum = 0;
  for (int e : order) wsum += probs[static_cast<size_t>(e)];
  const Tensor gate = get(p + "ffn_gate_exps.weight"), up = get(p + "ffn_up_exps.weight"),
               down = get(p + "ffn_down_exps.weight");
  Vec out(x.size(), 0.0f);
  for (int e : order) {
    double w = probs[static_cast<size_t>(e)];
    if (m.norm_weights) w /= wsum;
    w *= m.weights_scale;
    const Vec y = swiglu_ffn(gate, up, down, x, e);
    for (size_t i = 0; i < out.size(); ++i) out[i] += static_cast<float>(w * y[i]);
  }
  if (has(p + "ffn_gate_shexp.weight")) {
    const Vec y = swiglu_ffn(get(p + "ffn_gate_shexp.weight"), get(p + "ffn_up_shexp.weight"),
                             get(p + "ffn_down_shexp.weight"), x);
    double g = 1.0;
    if (has(p + "ffn_gate_inp_shexp.weight")) {
      const Tensor gi = get(p + "ffn_gate_inp_shexp.weight");
      double d = 0;
      for (size_t i = 0; i < x.size(); ++i) d += static_cast<double>(gi.v[i]) * x[i];
      g = 1.0 / (1.0 + std::exp(-d));
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] += static_cast<float>(g * y[i]);
  }
  return out;
}

std::vector<Vec> Ref::run(const std::vector<int32_t>& tokens) {
  const Tensor embd = get("token_embd.weight");
  const int64_t dim = c_.dim;
  std::vector<Vec> x;
  for (int32_t tok : tokens) x.emplace_back(embd.row(tok), embd.row(tok) + dim);
  for (int64_t l = 0; l < c_.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const Tensor an = get(p + "attn_norm.weight"), fn = get(p + "ffn_norm.weight");
    std::vector<Vec> xn;
    for (const auto& r : x) xn.push_back(rmsnorm(r.data(), dim, an));
    const Vec att = c_.mla.enabled() ? mla(l, xn) : attention(l, xn);
    for (size_t t = 0; t < x.size(); ++t)
      for (int64_t i = 0; i < dim; ++i)
        x[t][static_cast<size_t>(i)] += att[t * static_cast<size_t>(dim) + static_cast<size_t>(i)];
    for (auto& r : x) {
      const Vec y = ffn(l, rmsnorm(r.data(), dim, fn));
      for (int64_t i = 0; i < dim; ++i) r[static_cast<size_t>(i)] += y[static_cast<size_t>(i)];
    }
  }
  const Tensor on = get("output_norm.weight");
  const Tensor out = has("output.weight") ? get("output.weight") : embd;
  std::vector<Vec> logits;
  for (const auto& r : x) logits.push_back(mul(out, rmsnorm(r.data(), dim, on).data()));
  return logits;
}

}  // namespace

std::vector<std::vector<float>> reference_logits(const std::string& path,
                                                 const std::vector<int32_t>& tokens) {
  return Ref(path).run(tokens);
}

}  // namespace strata::testing
