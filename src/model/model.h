// A loaded Llama-family model and its forward pass over a ForwardBatch.
// The whole forward pass reads top to bottom in model.cpp; the architecture-specific
// choices come from the ArchSpec fields copied into ModelConfig.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "attention/paged_attention.h"
#include "core/huge_buffer.h"
#include "core/thread_pool.h"
#include "gguf/gguf.h"
#include "kernels/cpu/matmul.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/config.h"
#include "model/mla_attention.h"
#include "model/moe_ffn.h"
#include "model/weights.h"
#include "trace/tracer.h"

namespace strata {

// Sees the input of the model's dense matmuls (attention q/k/v/output, FFN gate/up/down
// and the classifier): `weight` is the matrix's data pointer (ModelWeights), `x` its
// n_tokens x cols input rows. For calibration (strata quantize --calib: per-column
// activation statistics). Called on the thread that runs forward(), after the matmul.
// MoE experts and MLA projections are not observed.
class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  virtual void observe(const void* weight, const float* x, int64_t n_tokens, int64_t cols) = 0;
};

class Model {
 public:
  // Maps the file, reads the config and binds the weights (throws strata::Error).
  // How the weights are held: read into memory on transparent huge pages (the default:
  // faster decode), or used in place from a read-only mapping of the file (`--mmap`: less
  // resident memory, pages shared with other processes and the page cache).
  enum class WeightMemory { huge_pages, mmap };
  struct LoadOptions {
    WeightMemory memory = WeightMemory::huge_pages;
    // Rewrite matmul weights in place into a faster layout where this CPU has kernels for
    // one (load_weights, kernels::repacked_weight_type: Q4_0 -> Q4_0_X16 and the other
    // X16 layouts with AVX2 or AVX-512 VNNI). Needs owned
    // memory, so it does nothing with WeightMemory::mmap. `--no-repack` turns it off.
    bool repack_weights = true;
    // MLA models only (`--mla-attention`): absorbed, decompressed or automatic (from_file
    // leaves a model absorbed; set_mla_attention changes it).
    MlaAttentionMode mla_attention = MlaAttentionMode::automatic;
  };
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& options);
  static std::unique_ptr<Model> load(const std::string& path,
                                     WeightMemory memory = WeightMemory::huge_pages) {
    LoadOptions options;
    options.memory = memory;
    return load(path, options);
  }
  static std::unique_ptr<Model> from_file(gguf::GgufFile file, bool repack_weights = true);

  // MLA models: how attention meets the latent cache from now on (nothing otherwise).
  // Not while a forward pass runs.
  void set_mla_attention(MlaAttentionMode mode);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::GgufFile& file() const { return file_; }
  // Bytes of weights read to produce one token (every matrix once, plus one embedding row).
  size_t weight_bytes_per_token() const;
  // Parameters of the weights a token is multiplied by (dense matrices, and of the expert
  // stacks only the n_experts_used experts it is routed to), the embedding row excluded.
  double active_params_per_token() const;
  // KV cache bytes one token takes across all layers at `element_size` bytes per element:
  // K and V per KV head, or MLA's one latent row (kv_lora_rank + rope dims) per layer.
  size_t kv_bytes_per_token(size_t element_size) const;
  // Tokens each expert of each MoE layer has been routed since load (empty when dense).
  // Read it on the thread that runs forward().
  const ExpertLoad& expert_load() const { return expert_load_; }
  // Parameters of the matrices multiplied per token (active_params_per_token: the
  // embedding table is only indexed): a token costs 2 x this many FLOPs.
  double matmul_params() const;

  // The KV cache layout for this model; with streaming heads in `modes` their K/V go to
  // a separate pool of n_stream_blocks blocks.
  KvCacheConfig kv_config(int64_t n_blocks, int64_t block_size, DType dtype,
                          const HeadModes& modes = {}, int64_t n_stream_blocks = 0) const;

  // Runs the batch: writes each token's K/V into `cache` through the block tables and
  // returns the logits of the rows in batch.logit_rows, [logit_rows.size()][n_vocab],
  // valid until the next call. Buffers grow to the largest batch seen and are reused, so
  // a steady decode loop does not allocate.
  std::span<const float> forward(const ForwardBatch& batch, KvCache& cache, ThreadPool& pool);
  // Grows the batch buffers now for up to `n_tokens` tokens and `n_logits` logit rows, the
  // MoE and MLA layers' too (a server's first request then does not pay their first touch
  // inside its first forward).
  void reserve_batch(int64_t n_tokens, int64_t n_logits, int n_threads, int64_t block_size);
  // The largest batch every buffer of this model's layers (dense, MoE, MLA) holds now.
  int64_t reserved_tokens() const;

  // The matrix bound from tensor `name` (find_matrix in weights.h), or null. A probe may
  // rebind it between forward passes to data of the same shape in any type the kernels
  // read for it (the embedding is read by rows, so not a repacked type); the data must
  // outlive its use, and the caller restores the original.
  WeightMatrix* mutable_matrix(const std::string& name) {
    return find_matrix(weights_, config_, name);
  }

  // Records forward-pass spans (per layer: norms, matmuls, rope, attention) into
  // `tracer` from now on; null (the default) turns tracing off.
  void set_tracer(Tracer* tracer) { tracer_ = tracer; }
  Tracer* tracer() const { return tracer_; }

  // Reports every dense matmul's input to `observer` from now on; null (the default)
  // turns it off (one pointer test per matmul).
  void set_matmul_observer(MatmulObserver* observer) { observer_ = observer; }

 private:
  Model(gguf::GgufFile file, bool repack_weights);
  void validate(const ForwardBatch& batch, const KvCache& cache) const;
  void validate_stream_blocks(const SequenceView& seq, int64_t pos, const KvCache& cache) const;
  void reserve(int64_t n_tokens, int64_t n_logits, int n_threads, int64_t block_size);
  void compute_rope_tables(const ForwardBatch& batch);
  // Bias, Q/K norms and RoPE, in place, of token t's query heads that share KV heads
  // [g0, g1) and of those KV heads (per head, so threads may take disjoint head ranges).
  void position_heads(const LayerWeights& L, int64_t t, int64_t g0, int64_t g1);
  void attention_by_head(int64_t layer, const ForwardBatch& batch, KvCache& cache, ThreadPool& pool,
                         const AttentionShape& shape, TraceSpan& span);
  void attention_block(int64_t layer, const ForwardBatch& batch, KvCache& cache, ThreadPool& pool);
  void mla_block(int64_t layer, const ForwardBatch& batch, KvCache& cache, ThreadPool& pool);
  void ffn_block(int64_t layer, int64_t n_tokens, ThreadPool& pool);
  void moe_block(int64_t layer, int64_t n_tokens, ThreadPool& pool);
  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool,
              const kernels::MatmulHooks& hooks = {});
  void norm_then_matmul(const float* norm, std::span<const kernels::MatmulJob> jobs,
                        int64_t n_tokens, ThreadPool& pool);
  // Adds the pending block output into the residual stream now (before code that reads
  // x_ other than norm_then_matmul).
  void add_pending_residual(ThreadPool& pool, int64_t n_tokens);

  gguf::GgufFile file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<float> inv_freq_;         // (rope_dim/2) RoPE angular frequencies
  float rope_magnitude_ = 1.0f;         // YaRN's scale of the rotated dims
  Tracer* tracer_ = nullptr;            // not owned; null = tracing off
  MatmulObserver* observer_ = nullptr;  // not owned; null = no observer

  // Workspace, sized for the largest batch seen so far.
  int64_t capacity_tokens_ = 0;
  int64_t capacity_logits_ = 0;
  HugePageVector<float> x_;                 // (T, dim) residual stream
  HugePageVector<float> xb_;                // (T, dim) normed input / attention projection output
  HugePageVector<float> q_;                 // (T, n_heads*head_dim)
  HugePageVector<float> k_;                 // (T, n_kv_heads*head_dim)
  HugePageVector<float> v_;                 // (T, n_kv_heads*head_dim)
  HugePageVector<float> att_;               // (T, n_heads*head_dim) attention output
  HugePageVector<float> gate_;              // (T, ffn_dim)
  HugePageVector<float> up_;                // (T, ffn_dim)
  HugePageVector<float> moe_out_;           // (T, dim) MoE layers' FFN output
  std::vector<float> rope_cos_, rope_sin_;  // (T, rope_dim/2)
  HugePageVector<float> final_;             // (R, dim) normed rows that need logits
  HugePageVector<float> logits_;            // (R, n_vocab)
  std::vector<uint8_t> matmul_scratch_;
  AttentionScratch attention_scratch_;
  std::vector<KvSlot> kv_slots_;  // (T) where each token's K/V go in the current layer
  MoeFfn moe_;                    // MoE layers' routing and expert buffers
  MlaAttention mla_;              // deepseek2's attention buffers
  ExpertLoad expert_load_;
  // A dense block's output (T, dim) not yet added into x_: the next norm_then_matmul adds
  // each row just before norming it, in the same pass (add_pending_residual otherwise).
  const float* pending_residual_ = nullptr;
};

}  // namespace strata
