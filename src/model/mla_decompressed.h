// MLA attention in the decompressed form: each chunk of a sequence's cached latent rows
// is expanded into per-head keys (W_kb^h c_j, with the shared RoPE key) and values
// (W_vb^h c_j), and the queries attend to them as in ordinary multi-head attention. The
// expansion costs (nope + v) x kv_lora_rank per head and cached position once per step,
// shared by every query token of the sequence in that step; the absorbed form
// (mla_attention.h) instead costs ~2 kv_lora_rank per head, position and query token. So
// absorbed wins for decode and decompressed for prefill chunks of more than roughly
// kv_lora_rank^2 (nope+v) / ((2 kv_lora_rank - nope - v) kv_lora_rank) query tokens
// (docs/BENCHMARKS.md measures the crossover). The cache is the same latent cache either way.
#pragma once

#include <cstdint>
#include <vector>

#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/weights.h"

namespace strata {

class MlaDecompressed {
 public:
  // Float copies of every layer's W_kb^h transposed (nope x kv_lora_rank) and W_vb^h
  // (v x kv_lora_rank), widened once (any weight type with a to_float, repacked ones
  // included). Call once before attend().
  void prepare(const ModelConfig& config, const std::vector<LayerWeights>& layers);
  bool prepared() const { return !kb_t_.empty(); }

  // values[t][h] (v_head_dim floats) for the tokens t of batch sequence `seq` (their
  // latent rows already written to `cache`): softmax(scale * [q_nope, q_pe] . [k, k_pe]) V
  // over positions <= pos(t). q is [n_tokens][n_heads][nope + rope] (RoPE applied).
  // The heads are split across the pool; each output is the same whatever the thread count.
  void attend(const ModelConfig& config, int64_t layer, const ForwardBatch& batch, int32_t seq,
              const KvCache& cache, float scale, const float* q, float* values, ThreadPool& pool);
  // Grows the buffers for a sequence of n_tokens batch tokens on n_threads threads (attend
  // does so itself; the engine calls it at start so that the first request does not fault
  // the pages in).
  void reserve(const ModelConfig& config, int64_t n_tokens, int n_threads);
  int64_t capacity() const { return capacity_; }

 private:
  std::vector<std::vector<float>> kb_t_;  // per layer: (n_heads, nope, kv_lora_rank)
  std::vector<std::vector<float>> vb_;    // per layer: (n_heads, v, kv_lora_rank)
  std::vector<int32_t> tokens_;           // batch tokens of the sequence being attended
  HugePageVector<float> q_, m_, l_, o_;   // (n, H, nope+rope), (n, H), (n, H), (n, H, v)
  HugePageVector<float> thread_;          // per-thread chunk buffers
  int64_t capacity_ = 0;                  // tokens q_ ... thread_ hold on capacity_threads_
  int capacity_threads_ = 0;
};

}  // namespace strata
