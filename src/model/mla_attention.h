// DeepSeek-V2 multi-latent attention of one layer over a latent KV cache
// (attention/latent_attention.h). Per token: the query (through the q LoRA, or attn_q),
// the latent c_kv = RMSNorm(first kv_lora_rank rows of attn_kv_a_mqa . x) and the shared
// RoPE key k_pe (its last rope dims); the cache stores [c_kv, k_pe]. Each head's query is
// absorbed into the latent space, q_lat = W_kb^h q_nope, so attention runs on the latent
// rows directly, and W_vb^h maps the head's latent output to its value afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention/latent_attention.h"
#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/mla_decompressed.h"
#include "model/weights.h"

namespace strata {

// The attention logit scale of an MLA model: 1/sqrt(nope + rope), times YaRN's mscale^2
// where the file extends the context (DeepSeek's softmax_scale).
float mla_attention_scale(const ModelConfig& config);

// How a sequence's queries meet the latent cache (`--mla-attention`): absorbed (no
// per-head K/V; cheapest per query token, so decode), decompressed (keys and values
// expanded from the latent rows each step, mla_decompressed.h; cheapest for long prefill
// chunks), or automatic (Model::load's default): decompressed for a sequence with at least
// kMlaDecompressMinTokens query tokens in the step, absorbed otherwise. The two forms
// round differently (within 2e-3 of the reference either way), so `auto` makes a prompt's
// logits depend at float-rounding level on how it was chunked; each sequence still gets
// what it gets alone, whatever else is in the batch.
enum class MlaAttentionMode { absorbed, decompressed, automatic };
// Measured on the deepseek2-1b preset at 4K depth: decompressed is slower at 32-token
// chunks (18 vs 23 tok/s) and faster at 64 (38 vs 23) (docs/BENCHMARKS.md).
inline constexpr int64_t kMlaDecompressMinTokens = 64;
// "absorbed", "decompressed" or "auto"; throws strata::Error naming the flag otherwise.
MlaAttentionMode mla_attention_mode_from_name(const std::string& name);

class MlaAttention {
 public:
  // Selects the form; a mode other than absorbed widens W_kb/W_vb to floats once.
  void configure(MlaAttentionMode mode, const ModelConfig& config,
                 const std::vector<LayerWeights>& layers);
  MlaAttentionMode mode() const { return mode_; }

  // out (T, dim) = the layer's attention output (after attn_output) for the normed
  // inputs xb (T, dim); writes each token's latent row into `cache`. rope_cos/sin hold
  // rope_dim/2 values per batch token. Buffers are reused across calls.
  void forward(const ModelConfig& config, const LayerWeights& w, int64_t layer,
               const ForwardBatch& batch, const float* xb, const float* rope_cos,
               const float* rope_sin, KvCache& cache, ThreadPool& pool,
               std::vector<uint8_t>& scratch, float* out);
  // Grows the buffers to batches of n_tokens on n_threads threads, the decompressed form's
  // too where it is prepared (forward does so itself; the engine calls it at start so that
  // the first request does not fault the pages in).
  void reserve(const ModelConfig& config, int64_t n_tokens, int n_threads);
  int64_t capacity() const;

 private:
  void absorbed(const ModelConfig& config, const LayerWeights& w, int64_t layer,
                const ForwardBatch& batch, KvCache& cache, ThreadPool& pool,
                std::vector<uint8_t>& scratch);
  void project(const ModelConfig& config, const LayerWeights& w, const float* xb, int64_t T,
               ThreadPool& pool, std::vector<uint8_t>& scratch);

  int64_t capacity_ = 0;
  HugePageVector<float> q_a_;    // (T, q_lora_rank)
  HugePageVector<float> q_;      // (T, n_heads*(nope+rope))
  HugePageVector<float> kv_a_;   // (T, kv_lora_rank+rope) [c_kv, k_pe]
  HugePageVector<float> q_lat_;  // (T, n_heads, kv_lora_rank+rope) absorbed queries
  HugePageVector<float> o_lat_;  // (T, n_heads, kv_lora_rank) attention in latent space
  HugePageVector<float> head_in_,
      head_out_;                  // (T, max(nope, kv_lora_rank)), (T, max(kv_lora_rank, v))
  HugePageVector<float> values_;  // (T, n_heads*v_head_dim)
  std::vector<KvSlot> slots_;     // (T)
  LatentScratch latent_;

  MlaAttentionMode mode_ = MlaAttentionMode::absorbed;
  MlaDecompressed decompressed_;
  std::vector<int32_t> seq_tokens_;     // (n_seqs) query tokens of each sequence this step
  std::vector<int32_t> abs_tokens_;     // batch tokens that attend absorbed
  std::vector<int32_t> abs_positions_;  // their positions and sequences (a sub-batch)
  std::vector<int32_t> abs_seq_index_;
};

}  // namespace strata
