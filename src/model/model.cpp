#include "model/model.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

// YaRN (ggml's rope_yarn with ext_factor 1): the frequencies of dimension pairs that turn
// fewer than beta_slow times over the original context are interpolated (divided by the
// factor), those that turn more than beta_fast times are kept, with a linear ramp between.
// Positions enter RoPE linearly, so this is a per-pair factor on the frequency.
double yarn_frequency_factor(const ModelConfig& c, int64_t pair) {
  const double n_dims = static_cast<double>(c.rope_dim);
  const double base = static_cast<double>(c.rope_base);
  const double ctx = static_cast<double>(c.yarn.original_context);
  const auto corr_dim = [&](double n_rot) {
    return n_dims * std::log(ctx / (n_rot * 2.0 * M_PI)) / (2.0 * std::log(base));
  };
  const double low = std::max(0.0, std::floor(corr_dim(c.yarn.beta_fast)));
  const double high = std::min(n_dims - 1.0, std::ceil(corr_dim(c.yarn.beta_slow)));
  const double y = (static_cast<double>(pair) - low) / std::max(0.001, high - low);
  const double ramp = 1.0 - std::min(1.0, std::max(0.0, y));  // 1 = keep (extrapolate)
  return (1.0 - ramp) / static_cast<double>(c.yarn.factor) + ramp;
}

// fn(t0, t1) over the tokens [0, T) of a step: split across the pool for a batch (every
// token's result is computed alone, so the split cannot change it), on the calling thread
// for one token (which may be inside a pool job already).
template <class Fn>
void for_token_ranges(ThreadPool& pool, int64_t T, Fn&& fn) {
  if (T > 1 && pool.size() > 1) {
    pool.parallel_for(T, fn);
  } else {
    fn(int64_t{0}, T);
  }
}

// x += y, row by row, for T rows of n.
void add_rows(ThreadPool& pool, int64_t T, int64_t n, float* x, const float* y) {
  for_token_ranges(pool, T, [&](int64_t t0, int64_t t1) {
    kernels::add(x + t0 * n, y + t0 * n, (t1 - t0) * n);
  });
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& options) {
  const bool mapped = options.memory == WeightMemory::mmap;
  auto model = from_file(mapped ? gguf::GgufFile::open(path) : gguf::GgufFile::read(path),
                         options.repack_weights);
  model->set_mla_attention(options.mla_attention);
  return model;
}

void Model::set_mla_attention(MlaAttentionMode mode) {
  if (config_.mla.enabled()) mla_.configure(mode, config_, weights_.layers);
}

std::unique_ptr<Model> Model::from_file(gguf::GgufFile file, bool repack_weights) {
  return std::unique_ptr<Model>(new Model(std::move(file), repack_weights));
}

Model::Model(gguf::GgufFile file, bool repack_weights) : file_(std::move(file)) {
  config_ = config_from_gguf(file_);
  weights_ = load_weights(file_, config_, repack_weights);
  if (config_.moe.enabled()) expert_load_.reset(config_.n_layers, config_.moe.n_experts);
  // YaRN scales the rotated dims by 1 + 0.1 ln(factor) (HF's attention_factor, ggml's
  // rope mscale); DeepSeek's files (mscale == mscale_all_dim) cancel it and scale the
  // attention logits instead (mla_attention_scale).
  if (config_.yarn.factor > 0.0f && !config_.mla.enabled())
    rope_magnitude_ = 1.0f + 0.1f * std::log(config_.yarn.factor);
  const int64_t half = config_.rope_dim / 2;
  inv_freq_.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = std::pow(static_cast<double>(config_.rope_base),
                        -2.0 * static_cast<double>(i) / static_cast<double>(config_.rope_dim));
    if (!weights_.rope_freq_factors.empty()) {
      const float factor = weights_.rope_freq_factors[static_cast<size_t>(i)];
      if (!(factor > 0.0f))
        throw Error(file_.name() + ": rope_freqs.weight has a non-positive factor");
      f /= factor;
    }
    if (config_.yarn.factor > 0.0f) f *= yarn_frequency_factor(config_, i);
    inv_freq_[static_cast<size_t>(i)] = static_cast<float>(f);
  }
}

size_t Model::weight_bytes_per_token() const {
  size_t total = weights_.token_embd.row_bytes + weights_.output.bytes();
  const auto k = static_cast<size_t>(config_.moe.n_experts_used);
  for (const auto& L : weights_.layers) {
    total += L.wq.bytes() + L.wk.bytes() + L.wv.bytes() + L.wo.bytes() + L.w_gate.bytes() +
             L.w_up.bytes() + L.w_down.bytes();
    const MoeWeights& e = L.moe;
    total += e.router.bytes() + e.shared_gate.bytes() + e.shared_up.bytes() +
             e.shared_down.bytes() +
             k * (e.gate.matrix_bytes() + e.up.matrix_bytes() + e.down.matrix_bytes());
    const MlaWeights& a = L.mla;
    total += a.wq_a.bytes() + a.wq_b.bytes() + a.wkv_a.bytes() + a.k_b.bytes() + a.v_b.bytes();
  }
  return total;
}

size_t Model::kv_bytes_per_token(size_t element_size) const {
  const auto& c = config_;
  // MLA caches its latent row once per layer (ModelConfig: one KV head of that width),
  // with no separate V.
  const int64_t per_layer = c.mla.enabled() ? c.head_dim : 2 * c.n_kv_heads * c.head_dim;
  return static_cast<size_t>(c.n_layers * per_layer) * element_size;
}

KvCacheConfig Model::kv_config(int64_t n_blocks, int64_t block_size, DType dtype,
                               const HeadModes& modes, int64_t n_stream_blocks) const {
  KvCacheConfig kc;
  kc.modes = modes;
  kc.n_stream_blocks = modes.n_streaming() > 0 ? n_stream_blocks : 0;
  kc.n_layers = config_.n_layers;
  kc.n_kv_heads = config_.n_kv_heads;
  kc.head_dim = config_.head_dim;
  kc.block_size = block_size;
  kc.n_blocks = n_blocks;
  kc.dtype = dtype;
  kc.latent = config_.mla.enabled();
  return kc;
}

// Sparse attention: every stream block a token at `pos` reads (its sinks and its
// window) must be held, or attention would read a released block.
void Model::validate_stream_blocks(const SequenceView& s, int64_t pos, const KvCache& cache) const {
  const auto& kc = cache.config();
  const StreamingRange r = streaming_range(pos, kc.modes.sink, kc.modes.window);
  const auto check = [&](int64_t first, int64_t last) {  // blocks [first, last]
    for (int64_t bi = first; bi <= last; ++bi) {
      if (bi >= static_cast<int64_t>(s.stream_table.size()))
        throw Error("forward: stream table too short");
      const int32_t blk = s.stream_table[static_cast<size_t>(bi)];
      if (blk < 0 || blk >= kc.n_stream_blocks)
        throw Error("forward: stream block missing or out of range");
    }
  };
  if (r.sink_end > 0) check(0, (r.sink_end - 1) / kc.block_size);
  check(r.window_begin / kc.block_size, pos / kc.block_size);
}

void Model::validate(const ForwardBatch& b, const KvCache& cache) const {
  const auto n = static_cast<size_t>(b.n_tokens());
  if (n == 0) throw Error("forward: empty batch");
  if (b.positions.size() != n || b.seq_index.size() != n) {
    throw Error("forward: tokens, positions and seq_index must have the same length");
  }
  const int64_t bs = cache.config().block_size;
  for (const auto& s : b.seqs) {
    if (s.context_len < 0 || s.context_len > static_cast<int64_t>(s.block_table.size()) * bs) {
      throw Error("forward: a sequence's context_len exceeds its block table");
    }
    for (int32_t blk : s.block_table) {
      if (blk < 0 || blk >= cache.config().n_blocks) throw Error("forward: block id out of range");
    }
  }
  for (size_t t = 0; t < n; ++t) {
    if (b.tokens[t] < 0 || b.tokens[t] >= config_.n_vocab) {
      throw Error("forward: token id " + std::to_string(b.tokens[t]) + " outside the vocabulary");
    }
    const int32_t s = b.seq_index[t];
    if (s < 0 || static_cast<size_t>(s) >= b.seqs.size()) throw Error("forward: bad seq_index");
    if (b.positions[t] < 0 || b.positions[t] >= b.seqs[static_cast<size_t>(s)].context_len) {
      throw Error("forward: position outside the sequence's context");
    }
    if (cache.config().n_stream_blocks > 0)
      validate_stream_blocks(b.seqs[static_cast<size_t>(s)], b.positions[t], cache);
  }
  int64_t prev = -1;
  for (int32_t r : b.logit_rows) {
    if (r <= prev || r >= b.n_tokens())
      throw Error("forward: logit_rows must be ascending token indices");
    prev = r;
  }
}

void Model::reserve(int64_t n_tokens, int64_t n_logits, int n_threads, int64_t block_size) {
  const auto& c = config_;
  if (n_tokens > capacity_tokens_) {
    const auto T = static_cast<size_t>(n_tokens);
    x_.resize(T * static_cast<size_t>(c.dim));
    xb_.resize(T * static_cast<size_t>(c.dim));
    q_.resize(T * static_cast<size_t>(c.n_heads * c.head_dim));
    att_.resize(q_.size());
    k_.resize(T * static_cast<size_t>(c.n_kv_heads * c.head_dim));
    v_.resize(k_.size());
    gate_.resize(T * static_cast<size_t>(c.ffn_dim));
    if (c.moe.enabled()) moe_out_.resize(T * static_cast<size_t>(c.dim));
    up_.resize(gate_.size());
    rope_cos_.resize(T * static_cast<size_t>(c.rope_dim / 2));
    rope_sin_.resize(rope_cos_.size());
    kv_slots_.resize(T);
    capacity_tokens_ = n_tokens;
  }
  if (n_logits > capacity_logits_) {
    final_.resize(static_cast<size_t>(n_logits * c.dim));
    logits_.resize(static_cast<size_t>(n_logits * c.n_vocab));
    capacity_logits_ = n_logits;
  }
  AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim, 0.0f};
  attention_scratch_.reserve(n_threads, shape, block_size);
}

void Model::reserve_batch(int64_t n_tokens, int64_t n_logits, int n_threads, int64_t block_size) {
  if (n_tokens <= 0 || n_logits <= 0) return;
  reserve(n_tokens, n_logits, n_threads, block_size);
  if (config_.moe.enabled()) moe_.reserve(config_, n_tokens);
  if (config_.mla.enabled()) mla_.reserve(config_, n_tokens, n_threads);
}

int64_t Model::reserved_tokens() const {
  int64_t n = capacity_tokens_;
  if (config_.moe.enabled()) n = std::min(n, moe_.capacity());
  if (config_.mla.enabled()) n = std::min(n, mla_.capacity());
  return n;
}

void Model::compute_rope_tables(const ForwardBatch& b) {
  const int64_t half = config_.rope_dim / 2;
  for (int64_t t = 0; t < b.n_tokens(); ++t) {
    const float pos =
        static_cast<float>(b.positions[static_cast<size_t>(t)]) / config_.rope_linear_scale;
    for (int64_t i = 0; i < half; ++i) {
      const float theta = pos * inv_freq_[static_cast<size_t>(i)];
      rope_cos_[static_cast<size_t>(t * half + i)] = rope_magnitude_ * std::cos(theta);
      rope_sin_[static_cast<size_t>(t * half + i)] = rope_magnitude_ * std::sin(theta);
    }
  }
}

void Model::matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                   ThreadPool& pool, const kernels::MatmulHooks& hooks) {
  kernels::matmul(w.type, w.data, w.rows, w.cols, x, n_tokens, y, pool, matmul_scratch_, hooks);
  if (observer_) observer_->observe(w.data, x, n_tokens, w.cols);
}

std::span<const float> Model::forward(const ForwardBatch& b, KvCache& cache, ThreadPool& pool) {
  TraceSpan forward_span(tracer_, "forward", kTraceForward);
  validate(b, cache);
  const auto& c = config_;
  const int64_t T = b.n_tokens();
  const auto R = static_cast<int64_t>(b.logit_rows.size());
  reserve(T, R, pool.size(), cache.config().block_size);
  compute_rope_tables(b);
  attention_scratch_.plan_groups(b);  // the same for every layer (attention_by_head)
  forward_span.arg("n_tokens", T)
      .arg("n_seqs", static_cast<int64_t>(b.seqs.size()))
      .arg("n_logits", R);
  pending_residual_ = nullptr;  // a forward that threw may have left one
  TraceSpan span(tracer_, "embedding", kTraceForward);

  // Embedding lookup: dequantize one row per token.
  const auto& embd_traits = kernels::type_traits(weights_.token_embd.type);
  for (int64_t t = 0; t < T; ++t) {
    embd_traits.to_float(weights_.token_embd.row(b.tokens[static_cast<size_t>(t)]),
                         x_.data() + t * c.dim, c.dim);
  }

  span.end();
  const int64_t n_layers = b.n_layers > 0 ? std::min<int64_t>(b.n_layers, c.n_layers) : c.n_layers;
  for (int64_t l = 0; l < n_layers; ++l) {
    TraceSpan layer_span(tracer_, "layer", kTraceForward);
    layer_span.arg("layer", l);
    attention_block(l, b, cache, pool);
    ffn_block(l, T, pool);
  }

  // Final norm and classifier only for the rows whose logits are wanted.
  span.next("final_norm");
  // The last block's output is added only for the rows that get logits (in final_).
  for (int64_t r = 0; r < R; ++r) {
    const int64_t t = b.logit_rows[static_cast<size_t>(r)];
    float* out = final_.data() + r * c.dim;
    std::copy_n(x_.data() + t * c.dim, c.dim, out);
    if (pending_residual_ != nullptr) kernels::add(out, pending_residual_ + t * c.dim, c.dim);
    kernels::rmsnorm(out, weights_.output_norm.data(), out, c.dim, c.rms_eps);
  }
  pending_residual_ = nullptr;
  span.next("lm_head");
  if (R > 0) matmul(weights_.output, final_.data(), R, logits_.data(), pool);
  return {logits_.data(), static_cast<size_t>(R * c.n_vocab)};
}

void Model::position_heads(const LayerWeights& L, int64_t t, int64_t g0, int64_t g1) {
  const auto& c = config_;
  const int64_t hd = c.head_dim;
  const int64_t q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  const int64_t n_rep = c.n_heads / c.n_kv_heads;
  const int64_t h0 = g0 * n_rep, h1 = g1 * n_rep;  // the query heads of KV heads [g0, g1)
  float* q = q_.data() + t * q_dim;
  float* k = k_.data() + t * kv_dim;
  float* v = v_.data() + t * kv_dim;
  if (c.qkv_bias) {
    for (int64_t i = h0 * hd; i < h1 * hd; ++i) q[i] += L.bq[static_cast<size_t>(i)];
    for (int64_t i = g0 * hd; i < g1 * hd; ++i) k[i] += L.bk[static_cast<size_t>(i)];
    for (int64_t i = g0 * hd; i < g1 * hd; ++i) v[i] += L.bv[static_cast<size_t>(i)];
  }
  if (c.qk_norm) {
    for (int64_t h = h0; h < h1; ++h)
      kernels::rmsnorm(q + h * hd, L.q_norm.data(), q + h * hd, hd, c.rms_eps);
    for (int64_t h = g0; h < g1; ++h)
      kernels::rmsnorm(k + h * hd, L.k_norm.data(), k + h * hd, hd, c.rms_eps);
  }
  const int64_t half = c.rope_dim / 2;
  const float* cs = rope_cos_.data() + t * half;
  const float* sn = rope_sin_.data() + t * half;
  const bool neox = c.rope_layout == RopeLayout::kNeox;
  kernels::rope(q + h0 * hd, h1 - h0, hd, c.rope_dim, cs, sn, neox);
  kernels::rope(k + g0 * hd, g1 - g0, hd, c.rope_dim, cs, sn, neox);
}

// RoPE, the K/V writes and attention of one layer in one pool job. Each thread positions
// and stores the K/V of its own range of KV heads (both on one thread while the others
// waited took 7-9 us of each decode layer at llama-1b). A decode step of one sequence
// then attends over those same heads without waiting for the others, when the heads cost
// the same (a dense layer) and divide evenly; otherwise the threads meet at a barrier and
// share attention's items as paged_attention does. The results are those of write_kv and
// paged_attention: every step is per head, and attention's rows do not depend on which
// thread computes them.
void Model::attention_by_head(int64_t layer, const ForwardBatch& b, KvCache& cache,
                              ThreadPool& pool, const AttentionShape& shape, TraceSpan& span) {
  const auto& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  const int64_t T = b.n_tokens();
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  // Resolved here, where an error can be thrown.
  for (int64_t t = 0; t < T; ++t) {
    const auto& seq = b.seqs[static_cast<size_t>(b.seq_index[static_cast<size_t>(t)])];
    kv_slots_[static_cast<size_t>(t)] =
        resolve_kv_slot(cache, layer, seq, b.positions[static_cast<size_t>(t)]);
  }
  const AttentionPass pass(cache, layer, b, shape, q_.data(), att_.data(), pool.size(),
                           attention_scratch_);
  const bool dense = cache.config().modes.n_streaming_in_layer(layer) == 0;
  const bool own_heads =
      T == 1 && dense && c.n_kv_heads % pool.size() == 0 && pass.n_merge_items() == 0;
  const int64_t items_per_head = pass.n_items() / c.n_kv_heads;
  std::atomic<int64_t> next_item{0};
  pool.run([&](int tid, int nt) {
    const int64_t g0 = c.n_kv_heads * tid / nt, g1 = c.n_kv_heads * (tid + 1) / nt;
    if (own_heads) pass.prefetch_decode_tiles(g0, g1);
    for (int64_t t = 0; t < T; ++t) position_heads(L, t, g0, g1);
    if (tid == 0) span.next("write_kv");
    for (int64_t t = 0; t < T; ++t) {
      write_kv_heads(cache, layer, kv_slots_[static_cast<size_t>(t)], k_.data() + t * kv_dim,
                     v_.data() + t * kv_dim, g0, g1);
    }
    if (tid == 0) span.next("attention");
    if (own_heads) {  // items are ordered KV head first
      for (int64_t i = g0 * items_per_head; i < g1 * items_per_head; ++i) pass.run_item(i, tid);
      return;
    }
    pool.team_barrier();  // every head's K/V is written
    for (int64_t i; (i = next_item.fetch_add(1, std::memory_order_relaxed)) < pass.n_items();)
      pass.run_item(i, tid);
    if (pass.n_merge_items() == 0) return;
    pool.team_barrier();  // every chunk of a split-K decode is folded
    for (int64_t g = tid; g < pass.n_merge_items(); g += nt) pass.merge_item(g, tid);
  });
}

void Model::mla_block(int64_t layer, const ForwardBatch& b, KvCache& cache, ThreadPool& pool) {
  const auto& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  const int64_t T = b.n_tokens();
  TraceSpan span(tracer_, "mla_attention", kTraceForward);
  add_pending_residual(pool, T);
  for (int64_t t = 0; t < T; ++t) {
    kernels::rmsnorm(x_.data() + t * c.dim, L.attn_norm.data(), xb_.data() + t * c.dim, c.dim,
                     c.rms_eps);
  }
  // att_ holds n_heads*head_dim >= dim floats per token (head_dim is the latent row).
  mla_.forward(c, L, layer, b, xb_.data(), rope_cos_.data(), rope_sin_.data(), cache, pool,
               matmul_scratch_, att_.data());
  span.end();
  add_rows(pool, T, c.dim, x_.data(), att_.data());
}

void Model::attention_block(int64_t layer, const ForwardBatch& b, KvCache& cache,
                            ThreadPool& pool) {
  const auto& c = config_;
  if (c.mla.enabled()) return mla_block(layer, b, cache, pool);
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  const int64_t T = b.n_tokens();

  TraceSpan span(tracer_, "qkv_matmul", kTraceForward);
  const kernels::MatmulJob qkv[] = {{L.wq.type, L.wq.data, L.wq.rows, q_.data()},
                                    {L.wk.type, L.wk.data, L.wk.rows, k_.data()},
                                    {L.wv.type, L.wv.data, L.wv.rows, v_.data()}};
  norm_then_matmul(L.attn_norm.data(), qkv, T, pool);

  span.next("rope");
  const AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim,
                             1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  attention_by_head(layer, b, cache, pool, shape, span);

  span.next("out_matmul");
  matmul(L.wo, att_.data(), T, xb_.data(), pool);
  span.end();
  pending_residual_ = xb_.data();
}

void Model::add_pending_residual(ThreadPool& pool, int64_t T) {
  if (pending_residual_ == nullptr) return;
  add_rows(pool, T, config_.dim, x_.data(), pending_residual_);
  pending_residual_ = nullptr;
}

// RMSNorm of the residual stream x_ (weights `norm`) into xb_, then the matmuls of xb_,
// after adding the previous block's output into x_ (pending_residual_) in the same pass.
// The norm is their row preparation (kernels::MatmulHooks::prepare_rows): each token's row
// is normed just before it is converted, inside the matmul's pool job and span.
void Model::norm_then_matmul(const float* norm, std::span<const kernels::MatmulJob> jobs, int64_t T,
                             ThreadPool& pool) {
  const auto& c = config_;
  const float* residual = std::exchange(pending_residual_, nullptr);
  auto rmsnorm = [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* x = x_.data() + t * c.dim;
      if (residual != nullptr) kernels::add(x, residual + t * c.dim, c.dim);
      kernels::rmsnorm(x, norm, xb_.data() + t * c.dim, c.dim, c.rms_eps);
    }
  };
  kernels::MatmulHooks hooks;
  kernels::set_prepare_rows(hooks, rmsnorm);
  kernels::matmul_shared_input(jobs, c.dim, xb_.data(), T, pool, matmul_scratch_, hooks);
  if (observer_)
    for (const auto& j : jobs) observer_->observe(j.w, xb_.data(), T, c.dim);
}

// The MoE FFN (model/moe_ffn.h) of the normed residual stream, added to it.
void Model::moe_block(int64_t layer, int64_t T, ThreadPool& pool) {
  const auto& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  TraceSpan span(tracer_, "moe", kTraceForward);
  add_pending_residual(pool, T);
  for (int64_t t = 0; t < T; ++t) {
    kernels::rmsnorm(x_.data() + t * c.dim, L.ffn_norm.data(), xb_.data() + t * c.dim, c.dim,
                     c.rms_eps);
  }
  moe_.forward(c, L.moe, layer, xb_.data(), T, moe_out_.data(), pool, matmul_scratch_,
               expert_load_);
  if (tracer_) {
    const StepExpertLoad load = moe_.last_step_load();
    span.arg("experts_used", load.experts_used).arg("max_expert_tokens", load.max_tokens);
  }
  span.end();
  add_rows(pool, T, c.dim, x_.data(), moe_out_.data());
}

void Model::ffn_block(int64_t layer, int64_t T, ThreadPool& pool) {
  const auto& c = config_;
  if (c.moe.layer_is_moe(layer)) return moe_block(layer, T, pool);
  const LayerWeights& L = weights_.layers[static_cast<size_t>(layer)];
  TraceSpan span(tracer_, "gate_up_matmul", kTraceForward);
  const kernels::MatmulJob gate_up[] = {{L.w_gate.type, L.w_gate.data, L.w_gate.rows, gate_.data()},
                                        {L.w_up.type, L.w_up.data, L.w_up.rows, up_.data()}};
  norm_then_matmul(L.ffn_norm.data(), gate_up, T, pool);
  // The down projection's row preparation (elementwise, so which thread runs a row cannot
  // change a value): each token's row just before it is converted.
  auto swiglu = [&](int64_t t0, int64_t t1) {
    kernels::swiglu(gate_.data() + t0 * c.ffn_dim, up_.data() + t0 * c.ffn_dim,
                    (t1 - t0) * c.ffn_dim);
  };
  kernels::MatmulHooks down_hooks;
  kernels::set_prepare_rows(down_hooks, swiglu);
  span.next("down_matmul");
  matmul(L.w_down, gate_.data(), T, xb_.data(), pool, down_hooks);
  span.end();
  pending_residual_ = xb_.data();
}

}  // namespace strata
