#include "model/moe_ffn.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"

namespace strata {

void route_token(const MoeConfig& moe, const float* logits, const float* bias, float* probs,
                 ExpertChoice* out) {
  const int64_t n = moe.n_experts, k = moe.n_experts_used;
  if (moe.gating == ExpertGating::kSoftmax) {
    float max_logit = logits[0];
    for (int64_t e = 1; e < n; ++e) max_logit = std::max(max_logit, logits[e]);
    double sum = 0.0;
    for (int64_t e = 0; e < n; ++e) {
      probs[e] = std::exp(logits[e] - max_logit);
      sum += probs[e];
    }
    for (int64_t e = 0; e < n; ++e) probs[e] = static_cast<float>(probs[e] / sum);
  } else {
    for (int64_t e = 0; e < n; ++e) probs[e] = 1.0f / (1.0f + std::exp(-logits[e]));
  }
  // Selection by k passes of a max search: k is small (2-8) and this keeps the order
  // fully defined (ties to the lower id) without sorting n experts.
  const auto score = [&](int64_t e) { return bias ? probs[e] + bias[e] : probs[e]; };
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n; ++e) {
      bool taken = false;
      for (int64_t i = 0; i < j; ++i) taken |= out[i].expert == e;
      if (!taken && (best < 0 || score(e) > score(best))) best = e;
    }
    out[j] = {static_cast<int32_t>(best), probs[best]};
  }
  if (moe.norm_weights) {
    double sum = 0.0;
    for (int64_t j = 0; j < k; ++j) sum += out[j].weight;
    // llama.cpp clamps the sum at the smallest normal f16 so that all-zero sigmoid
    // weights do not divide by zero.
    const double denom = std::max(sum, 6.103515625e-5);
    for (int64_t j = 0; j < k; ++j) out[j].weight = static_cast<float>(out[j].weight / denom);
  }
  for (int64_t j = 0; j < k; ++j) out[j].weight *= moe.weights_scale;
}

void ExpertLoad::reset(int64_t n_layers, int64_t n_experts) {
  n_layers_ = n_layers;
  n_experts_ = n_experts;
  counts_.assign(static_cast<size_t>(n_layers * n_experts), 0);
}

double ExpertLoad::layer_imbalance(int64_t layer) const {
  int64_t max = 0, sum = 0;
  for (int64_t c : layer_counts(layer)) {
    max = std::max(max, c);
    sum += c;
  }
  if (sum == 0) return 0.0;
  return static_cast<double>(max) * static_cast<double>(n_experts_) / static_cast<double>(sum);
}

double ExpertLoad::max_imbalance() const {
  double worst = 0.0;
  for (int64_t l = 0; l < n_layers_; ++l) worst = std::max(worst, layer_imbalance(l));
  return worst;
}

StepExpertLoad MoeFfn::last_step_load() const {
  StepExpertLoad s;
  for (size_t e = 0; e + 1 < expert_begin_.size(); ++e) {
    const int64_t n = expert_begin_[e + 1] - expert_begin_[e];
    s.experts_used += n > 0;
    s.max_tokens = std::max(s.max_tokens, n);
  }
  return s;
}

void MoeFfn::reserve(const ModelConfig& c, int64_t T) {
  const MoeConfig& m = c.moe;
  if (probs_.empty()) {
    probs_.resize(static_cast<size_t>(m.n_experts));
    expert_begin_.resize(static_cast<size_t>(m.n_experts + 1));
  }
  if (T <= capacity_) return;
  const auto t = static_cast<size_t>(T);
  const auto rows = std::max(t, static_cast<size_t>(m.n_experts_used));
  logits_.resize(t * static_cast<size_t>(m.n_experts));
  choices_.resize(t * static_cast<size_t>(m.n_experts_used));
  routed_.resize(choices_.size());
  xe_.resize(t * static_cast<size_t>(c.dim));
  ye_.resize(rows * static_cast<size_t>(c.dim));
  gate_.resize(rows * static_cast<size_t>(m.expert_ffn_dim));
  up_.resize(gate_.size());
  shared_gate_.resize(t * static_cast<size_t>(m.shared_ffn_dim));
  shared_up_.resize(shared_gate_.size());
  capacity_ = T;
}

// Router logits and each token's choices, then the choices grouped by expert: routed_
// [expert_begin_[e], expert_begin_[e+1]) lists the choice indices (t*k + j) of expert e
// in token order.
void MoeFfn::route(const ModelConfig& c, const MoeWeights& w, const float* x, int64_t T,
                   ThreadPool& pool, std::vector<uint8_t>& scratch) {
  const MoeConfig& m = c.moe;
  const int64_t k = m.n_experts_used;
  kernels::matmul(w.router.type, w.router.data, m.n_experts, c.dim, x, T, logits_.data(), pool,
                  scratch);
  const float* bias = w.router_bias.empty() ? nullptr : w.router_bias.data();
  for (int64_t t = 0; t < T; ++t) {
    ExpertChoice* ch = choices_.data() + t * k;
    route_token(m, logits_.data() + t * m.n_experts, bias, probs_.data(), ch);
    // Ascending expert id: the order every path adds the experts' outputs in, so a
    // token's sum does not depend on the path or on the other tokens of the batch.
    std::sort(ch, ch + k,
              [](const ExpertChoice& a, const ExpertChoice& b) { return a.expert < b.expert; });
  }
  std::fill(expert_begin_.begin(), expert_begin_.end(), 0);
  for (int64_t i = 0; i < T * k; ++i) ++expert_begin_[static_cast<size_t>(choices_[i].expert + 1)];
  for (int64_t e = 0; e < m.n_experts; ++e)
    expert_begin_[static_cast<size_t>(e + 1)] += expert_begin_[static_cast<size_t>(e)];
  // expert_begin_[e] serves as expert e's write cursor, which leaves it at expert e+1's
  // start; shifting the array by one restores the offsets.
  for (int64_t i = 0; i < T * k; ++i) {
    const auto e = static_cast<size_t>(choices_[static_cast<size_t>(i)].expert);
    routed_[static_cast<size_t>(expert_begin_[e]++)] = static_cast<int32_t>(i);
  }
  for (int64_t e = m.n_experts; e > 0; --e)
    expert_begin_[static_cast<size_t>(e)] = expert_begin_[static_cast<size_t>(e - 1)];
  expert_begin_[0] = 0;
}

// One expert over the tokens routed to it: gather their inputs, SwiGLU FFN with the
// expert's matrices as matmuls of all those tokens at once, scatter-add weighted.
void MoeFfn::run_expert(const ModelConfig& c, const MoeWeights& w, int64_t e, const float* x,
                        float* out, ThreadPool& pool, std::vector<uint8_t>& scratch) {
  const MoeConfig& m = c.moe;
  const int32_t begin = expert_begin_[static_cast<size_t>(e)];
  const int64_t n = expert_begin_[static_cast<size_t>(e + 1)] - begin;
  const int64_t k = m.n_experts_used, ff = m.expert_ffn_dim;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = routed_[static_cast<size_t>(begin + i)] / k;
    std::copy_n(x + t * c.dim, c.dim, xe_.data() + i * c.dim);
  }
  const kernels::MatmulJob gate_up[] = {{w.gate.type, w.gate.matrix_data(e), ff, gate_.data()},
                                        {w.up.type, w.up.matrix_data(e), ff, up_.data()}};
  kernels::matmul_shared_input(gate_up, c.dim, xe_.data(), n, pool, scratch);
  kernels::swiglu(gate_.data(), up_.data(), n * ff);
  kernels::matmul(w.down.type, w.down.matrix_data(e), c.dim, ff, gate_.data(), n, ye_.data(), pool,
                  scratch);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t choice = routed_[static_cast<size_t>(begin + i)];
    const float wt = choices_[static_cast<size_t>(choice)].weight;
    float* o = out + (choice / k) * c.dim;
    const float* y = ye_.data() + i * c.dim;
    for (int64_t d = 0; d < c.dim; ++d) o[d] += wt * y[d];
  }
}

// Token t alone (x and out are its rows): its k experts' gate and up matrices share the
// input, so they go as one dispatch of 2k matmuls; then the k down projections. The sums
// are run_expert's.
void MoeFfn::run_token(const ModelConfig& c, const MoeWeights& w, int64_t t, const float* x,
                       float* out, ThreadPool& pool, std::vector<uint8_t>& scratch) {
  const MoeConfig& m = c.moe;
  const int64_t k = m.n_experts_used, ff = m.expert_ffn_dim;
  const ExpertChoice* choices = choices_.data() + t * k;
  constexpr auto kMaxJobs = static_cast<int64_t>(kernels::kMaxSharedInputJobs);
  kernels::MatmulJob jobs[kMaxJobs];
  int64_t n_jobs = 0;
  for (int64_t j = 0; j < k; ++j) {
    const int32_t e = choices[j].expert;
    float* g = gate_.data() + j * ff;
    float* u = up_.data() + j * ff;
    if (n_jobs + 2 > kMaxJobs) {
      kernels::matmul_shared_input({jobs, static_cast<size_t>(n_jobs)}, c.dim, x, 1, pool, scratch);
      n_jobs = 0;
    }
    jobs[n_jobs++] = {w.gate.type, w.gate.matrix_data(e), ff, g};
    jobs[n_jobs++] = {w.up.type, w.up.matrix_data(e), ff, u};
  }
  kernels::matmul_shared_input({jobs, static_cast<size_t>(n_jobs)}, c.dim, x, 1, pool, scratch);
  kernels::swiglu(gate_.data(), up_.data(), k * ff);
  for (int64_t j = 0; j < k; ++j) {
    const int32_t e = choices[j].expert;
    kernels::matmul(w.down.type, w.down.matrix_data(e), c.dim, ff, gate_.data() + j * ff, 1,
                    ye_.data() + j * c.dim, pool, scratch);
  }
  for (int64_t j = 0; j < k; ++j) {
    const float wt = choices[j].weight;
    const float* y = ye_.data() + j * c.dim;
    for (int64_t d = 0; d < c.dim; ++d) out[d] += wt * y[d];
  }
}

// The shared expert: a dense SwiGLU FFN of every token, scaled per token by
// sigmoid(gate_inp . x) where the file has that gate (qwen2moe), added to out.
void MoeFfn::run_shared(const ModelConfig& c, const MoeWeights& w, const float* x, int64_t T,
                        float* out, ThreadPool& pool, std::vector<uint8_t>& scratch) {
  const int64_t ff = c.moe.shared_ffn_dim;
  const kernels::MatmulJob gate_up[] = {
      {w.shared_gate.type, w.shared_gate.data, ff, shared_gate_.data()},
      {w.shared_up.type, w.shared_up.data, ff, shared_up_.data()}};
  kernels::matmul_shared_input(gate_up, c.dim, x, T, pool, scratch);
  kernels::swiglu(shared_gate_.data(), shared_up_.data(), T * ff);
  float* y = xe_.data();  // free again: the routed experts are done
  kernels::matmul(w.shared_down.type, w.shared_down.data, c.dim, ff, shared_gate_.data(), T, y,
                  pool, scratch);
  for (int64_t t = 0; t < T; ++t) {
    float scale = 1.0f;
    if (!w.shared_gate_inp.empty()) {
      float dot = 0.0f;
      for (int64_t d = 0; d < c.dim; ++d)
        dot += w.shared_gate_inp[static_cast<size_t>(d)] * x[t * c.dim + d];
      scale = 1.0f / (1.0f + std::exp(-dot));
    }
    for (int64_t d = 0; d < c.dim; ++d) out[t * c.dim + d] += scale * y[t * c.dim + d];
  }
}

void MoeFfn::forward(const ModelConfig& c, const MoeWeights& w, int64_t layer, const float* x,
                     int64_t T, float* out, ThreadPool& pool, std::vector<uint8_t>& scratch,
                     ExpertLoad& load) {
  reserve(c, T);
  route(c, w, x, T, pool, scratch);
  std::fill_n(out, T * c.dim, 0.0f);
  if (T == 1) {
    run_token(c, w, 0, x, out, pool, scratch);
  } else {
    for (int64_t e = 0; e < c.moe.n_experts; ++e) {
      if (expert_begin_[static_cast<size_t>(e + 1)] > expert_begin_[static_cast<size_t>(e)])
        run_expert(c, w, e, x, out, pool, scratch);
    }
  }
  for (int64_t e = 0; e < c.moe.n_experts; ++e) {
    load.add(layer, e,
             expert_begin_[static_cast<size_t>(e + 1)] - expert_begin_[static_cast<size_t>(e)]);
  }
  if (c.moe.shared_ffn_dim > 0) run_shared(c, w, x, T, out, pool, scratch);
}

}  // namespace strata
