#include "model/mla_attention.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"

namespace strata {

float mla_attention_scale(const ModelConfig& c) {
  float mscale = 1.0f;
  // HF DeepSeek: softmax_scale *= yarn_get_mscale(factor, mscale_all_dim)^2, where
  // yarn_get_mscale(s, m) = 0.1 m ln(s) + 1. The RoPE tables themselves stay unscaled
  // (DeepSeek configs have mscale == mscale_all_dim, so the rotary embedding's factor is 1).
  if (c.yarn.factor > 0.0f) mscale = 1.0f + 0.1f * c.yarn.log_multiplier * std::log(c.yarn.factor);
  return mscale * mscale / std::sqrt(static_cast<float>(c.mla.qk_nope_dim + c.rope_dim));
}

MlaAttentionMode mla_attention_mode_from_name(const std::string& name) {
  if (name == "absorbed") return MlaAttentionMode::absorbed;
  if (name == "decompressed") return MlaAttentionMode::decompressed;
  if (name == "auto") return MlaAttentionMode::automatic;
  throw Error("--mla-attention: expected absorbed, decompressed or auto, got '" + name + "'");
}

void MlaAttention::configure(MlaAttentionMode mode, const ModelConfig& c,
                             const std::vector<LayerWeights>& layers) {
  mode_ = mode;
  if (mode != MlaAttentionMode::absorbed && c.mla.enabled() && !decompressed_.prepared())
    decompressed_.prepare(c, layers);
}

int64_t MlaAttention::capacity() const {
  return decompressed_.prepared() ? std::min(capacity_, decompressed_.capacity()) : capacity_;
}

void MlaAttention::reserve(const ModelConfig& c, int64_t T, int n_threads) {
  if (decompressed_.prepared()) decompressed_.reserve(c, T, n_threads);
  if (T <= capacity_) return;
  const MlaConfig& m = c.mla;
  const auto t = static_cast<size_t>(T);
  const auto H = static_cast<size_t>(c.n_heads);
  const auto L = static_cast<size_t>(m.kv_lora_rank);
  const auto row = L + static_cast<size_t>(c.rope_dim);
  q_a_.resize(t * static_cast<size_t>(m.q_lora_rank));
  q_.resize(t * H * static_cast<size_t>(m.qk_nope_dim + c.rope_dim));
  kv_a_.resize(t * row);
  q_lat_.resize(t * H * row);
  o_lat_.resize(t * H * L);
  head_in_.resize(t * std::max(L, static_cast<size_t>(m.qk_nope_dim)));
  head_out_.resize(t * std::max(L, static_cast<size_t>(m.v_head_dim)));
  values_.resize(t * H * static_cast<size_t>(m.v_head_dim));
  slots_.resize(t);
  capacity_ = T;
}

// The query (q LoRA with its norm, or attn_q) and [c_kv, k_pe] of every token.
void MlaAttention::project(const ModelConfig& c, const LayerWeights& w, const float* xb, int64_t T,
                           ThreadPool& pool, std::vector<uint8_t>& scratch) {
  const MlaConfig& m = c.mla;
  const MlaWeights& a = w.mla;
  const int64_t q_rows = c.n_heads * (m.qk_nope_dim + c.rope_dim);
  const int64_t kv_rows = m.kv_lora_rank + c.rope_dim;
  if (m.q_lora_rank > 0) {
    const kernels::MatmulJob jobs[] = {{a.wq_a.type, a.wq_a.data, a.wq_a.rows, q_a_.data()},
                                       {a.wkv_a.type, a.wkv_a.data, kv_rows, kv_a_.data()}};
    kernels::matmul_shared_input(jobs, c.dim, xb, T, pool, scratch);
    for (int64_t t = 0; t < T; ++t) {
      float* r = q_a_.data() + t * m.q_lora_rank;
      kernels::rmsnorm(r, a.q_a_norm.data(), r, m.q_lora_rank, c.rms_eps);
    }
    kernels::matmul(a.wq_b.type, a.wq_b.data, q_rows, m.q_lora_rank, q_a_.data(), T, q_.data(),
                    pool, scratch);
  } else {
    const kernels::MatmulJob jobs[] = {{w.wq.type, w.wq.data, q_rows, q_.data()},
                                       {a.wkv_a.type, a.wkv_a.data, kv_rows, kv_a_.data()}};
    kernels::matmul_shared_input(jobs, c.dim, xb, T, pool, scratch);
  }
  for (int64_t t = 0; t < T; ++t) {
    float* r = kv_a_.data() + t * kv_rows;
    kernels::rmsnorm(r, a.kv_a_norm.data(), r, m.kv_lora_rank, c.rms_eps);
  }
}

// The absorbed form for the tokens abs_tokens_ of the layer's batch, `b` being their
// sub-batch (token i of b is batch token abs_tokens_[i]): q_ in, values_ out.
void MlaAttention::absorbed(const ModelConfig& c, const LayerWeights& w, int64_t layer,
                            const ForwardBatch& b, KvCache& cache, ThreadPool& pool,
                            std::vector<uint8_t>& scratch) {
  const MlaConfig& m = c.mla;
  const MlaWeights& a = w.mla;
  const int64_t T = b.n_tokens(), H = c.n_heads, L = m.kv_lora_rank, R = c.rope_dim;
  const int64_t q_head = m.qk_nope_dim + R, row = L + R;
  const auto tok = [&](int64_t i) {
    return static_cast<int64_t>(abs_tokens_[static_cast<size_t>(i)]);
  };
  // Absorbed queries: q_lat[t][h] = [W_kb^h q_nope[t][h], q_pe[t][h]], one matmul of all
  // tokens per head.
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t t = 0; t < T; ++t) {
      std::copy_n(q_.data() + (tok(t) * H + h) * q_head, m.qk_nope_dim,
                  head_in_.data() + t * m.qk_nope_dim);
    }
    kernels::matmul(a.k_b.type, a.k_b.matrix_data(h), L, m.qk_nope_dim, head_in_.data(), T,
                    head_out_.data(), pool, scratch);
    for (int64_t t = 0; t < T; ++t) {
      float* dst = q_lat_.data() + (t * H + h) * row;
      std::copy_n(head_out_.data() + t * L, L, dst);
      std::copy_n(q_.data() + (tok(t) * H + h) * q_head + m.qk_nope_dim, R, dst + L);
    }
  }

  const LatentShape shape{H, L, R, mla_attention_scale(c)};
  latent_attention(cache, layer, b, shape, q_lat_.data(), o_lat_.data(), pool, latent_);

  // Values: W_vb^h of each head's latent output, then attn_output.
  for (int64_t h = 0; h < H; ++h) {
    for (int64_t t = 0; t < T; ++t)
      std::copy_n(o_lat_.data() + (t * H + h) * L, L, head_in_.data() + t * L);
    kernels::matmul(a.v_b.type, a.v_b.matrix_data(h), m.v_head_dim, L, head_in_.data(), T,
                    head_out_.data(), pool, scratch);
    for (int64_t t = 0; t < T; ++t) {
      std::copy_n(head_out_.data() + t * m.v_head_dim, m.v_head_dim,
                  values_.data() + (tok(t) * H + h) * m.v_head_dim);
    }
  }
}

void MlaAttention::forward(const ModelConfig& c, const LayerWeights& w, int64_t layer,
                           const ForwardBatch& b, const float* xb, const float* rope_cos,
                           const float* rope_sin, KvCache& cache, ThreadPool& pool,
                           std::vector<uint8_t>& scratch, float* out) {
  const MlaConfig& m = c.mla;
  const int64_t T = b.n_tokens(), H = c.n_heads, L = m.kv_lora_rank, R = c.rope_dim;
  const int64_t q_head = m.qk_nope_dim + R, row = L + R;
  reserve(c, T, pool.size());
  // Resolved first, where an error can be thrown.
  for (int64_t t = 0; t < T; ++t) {
    const auto& seq = b.seqs[static_cast<size_t>(b.seq_index[static_cast<size_t>(t)])];
    slots_[static_cast<size_t>(t)] =
        resolve_kv_slot(cache, layer, seq, b.positions[static_cast<size_t>(t)]);
  }
  project(c, w, xb, T, pool, scratch);

  // RoPE of each head's rope dims and of the shared key; store the latent rows.
  const bool neox = c.rope_layout == RopeLayout::kNeox;
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = rope_cos + t * (R / 2);
    const float* sn = rope_sin + t * (R / 2);
    float* q = q_.data() + t * H * q_head;
    for (int64_t h = 0; h < H; ++h)
      kernels::rope(q + h * q_head + m.qk_nope_dim, 1, R, R, cs, sn, neox);
    float* kv = kv_a_.data() + t * row;
    kernels::rope(kv + L, 1, R, R, cs, sn, neox);
    write_latent_row(cache, layer, slots_[static_cast<size_t>(t)], kv);
  }

  // Which sequences attend in which form this step (mode_; absorbed needs no choice).
  abs_tokens_.clear();
  bool any_decompressed = false;
  if (mode_ == MlaAttentionMode::absorbed) {
    for (int64_t t = 0; t < T; ++t) abs_tokens_.push_back(static_cast<int32_t>(t));
  } else {
    seq_tokens_.assign(b.seqs.size(), 0);
    for (int64_t t = 0; t < T; ++t)
      ++seq_tokens_[static_cast<size_t>(b.seq_index[static_cast<size_t>(t)])];
    const int64_t min_tokens =
        mode_ == MlaAttentionMode::decompressed ? 1 : kMlaDecompressMinTokens;
    for (int64_t t = 0; t < T; ++t) {
      const int32_t s_i = b.seq_index[static_cast<size_t>(t)];
      if (seq_tokens_[static_cast<size_t>(s_i)] < min_tokens)
        abs_tokens_.push_back(static_cast<int32_t>(t));
    }
    const float scale = mla_attention_scale(c);
    for (size_t s_i = 0; s_i < b.seqs.size(); ++s_i) {
      if (seq_tokens_[s_i] < min_tokens || seq_tokens_[s_i] == 0) continue;
      decompressed_.attend(c, layer, b, static_cast<int32_t>(s_i), cache, scale, q_.data(),
                           values_.data(), pool);
      any_decompressed = true;
    }
  }
  if (!abs_tokens_.empty()) {
    if (any_decompressed) {
      // The absorbed tokens as a sub-batch of their own (same sequences and positions).
      abs_positions_.clear();
      abs_seq_index_.clear();
      for (int32_t t : abs_tokens_) {
        abs_positions_.push_back(b.positions[static_cast<size_t>(t)]);
        abs_seq_index_.push_back(b.seq_index[static_cast<size_t>(t)]);
      }
      ForwardBatch sub;
      sub.tokens = abs_positions_;
      sub.positions = abs_positions_;
      sub.seq_index = abs_seq_index_;
      sub.seqs = b.seqs;
      absorbed(c, w, layer, sub, cache, pool, scratch);
    } else {
      absorbed(c, w, layer, b, cache, pool, scratch);
    }
  }
  kernels::matmul(w.wo.type, w.wo.data, c.dim, H * m.v_head_dim, values_.data(), T, out, pool,
                  scratch);
}

}  // namespace strata
