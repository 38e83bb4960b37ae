// Views of a model's weights inside the GGUF file's memory (used in place, never copied;
// optionally repacked in place for faster kernels), plus small f32 vectors (norm weights,
// biases) converted once at load.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "gguf/gguf.h"
#include "model/config.h"

namespace strata {

// A row-major matrix of `rows` rows, each `cols` elements of `type`, stored contiguously.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;

  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes; }
  size_t bytes() const { return row_bytes * static_cast<size_t>(rows); }
};

// A 3-D tensor of `n` matrices (experts, or MLA's per-head k_b / v_b), each `rows` rows of
// `cols` elements, matrix i at data + i * matrix_bytes. Read in place like WeightMatrix.
struct WeightStack {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t n = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;

  size_t matrix_bytes() const { return row_bytes * static_cast<size_t>(rows); }
  size_t bytes() const { return matrix_bytes() * static_cast<size_t>(n); }
  const uint8_t* matrix_data(int64_t i) const {
    return static_cast<const uint8_t*>(data) + static_cast<size_t>(i) * matrix_bytes();
  }
  WeightMatrix matrix(int64_t i) const { return {type, matrix_data(i), rows, cols, row_bytes}; }
};

// The routed experts of one MoE layer and its optional shared expert.
struct MoeWeights {
  WeightMatrix router;                  // (n_experts, dim) ffn_gate_inp
  std::vector<float> router_bias;       // (n_experts) selection-only bias (V3); empty = none
  WeightStack gate, up;                 // (n_experts, expert_ffn_dim, dim)
  WeightStack down;                     // (n_experts, dim, expert_ffn_dim)
  WeightMatrix shared_gate, shared_up;  // (shared_ffn_dim, dim); rows 0 = no shared expert
  WeightMatrix shared_down;             // (dim, shared_ffn_dim)
  std::vector<float> shared_gate_inp;   // (dim) qwen2moe's shared-expert gate; empty = none
};

// Multi-latent attention's projections of one layer (deepseek2).
struct MlaWeights {
  WeightMatrix wq_a;             // (q_lora_rank, dim); rows 0 = plain wq (LayerWeights)
  std::vector<float> q_a_norm;   // (q_lora_rank)
  WeightMatrix wq_b;             // (n_heads*(nope+rope), q_lora_rank)
  WeightMatrix wkv_a;            // (kv_lora_rank + rope, dim) attn_kv_a_mqa
  std::vector<float> kv_a_norm;  // (kv_lora_rank)
  WeightStack k_b;               // (n_heads, kv_lora_rank, nope): q_nope -> latent query
  WeightStack v_b;               // (n_heads, v_head_dim, kv_lora_rank): latent -> value
};

struct LayerWeights {
  std::vector<float> attn_norm;       // (dim)
  WeightMatrix wq;                    // (n_heads*head_dim, dim)
  WeightMatrix wk;                    // (n_kv_heads*head_dim, dim)
  WeightMatrix wv;                    // (n_kv_heads*head_dim, dim)
  WeightMatrix wo;                    // (dim, n_heads*head_dim)
  std::vector<float> bq, bk, bv;      // (rows of wq/wk/wv) when the arch has biases
  std::vector<float> q_norm, k_norm;  // (head_dim) when the arch norms Q/K per head
  std::vector<float> ffn_norm;        // (dim)
  WeightMatrix w_gate;                // (ffn_dim, dim)
  WeightMatrix w_up;                  // (ffn_dim, dim)
  WeightMatrix w_down;                // (dim, ffn_dim)
  MoeWeights moe;                     // MoE layers (config.moe.layer_is_moe) instead of w_*
  MlaWeights mla;                     // deepseek2 (config.mla.enabled) instead of wq/wk/wv
};

struct ModelWeights {
  WeightMatrix token_embd;               // (n_vocab, dim)
  std::vector<LayerWeights> layers;      // (n_layers)
  std::vector<float> output_norm;        // (dim)
  WeightMatrix output;                   // (n_vocab, dim); token_embd when tied
  std::vector<float> rope_freq_factors;  // (rope_dim/2) divisors of the RoPE frequencies; empty = 1
  // f32 copies made at load where the file's layout is not the one the kernels read
  // (a legacy fused attn_kv_b split into per-head k_b / v_b); stacks point into these.
  std::vector<std::vector<float>> owned;
};

// The matrix bound from tensor `name` where one WeightMatrix alone holds it: the
// embedding and the classifier when they are not tied, and the dense projections of a
// layer (attn_q/k/v/output, ffn_gate/up/down) outside MoE and MLA layers; null for
// anything else. For probes that rebind one matrix between forward passes.
WeightMatrix* find_matrix(ModelWeights& weights, const ModelConfig& config,
                          const std::string& name);

// Binds every tensor the config needs, checking names, shapes and types. Sets
// config.n_vocab from the embedding.
// With `repack`, each matrix used only by matmul (not the embedding, nor an output tied to
// it) whose type has a faster layout on this CPU (kernels::repacked_weight_type: Q4_0 ->
// Q4_0_X16, Q6_K -> Q6_K_X16, ..., with AVX2 or AVX-512) is
// rewritten in place in the file's memory and bound with
// that type. A read-only mapping (GgufFile::open) is never rewritten.
ModelWeights load_weights(gguf::GgufFile& file, ModelConfig& config, bool repack);

}  // namespace strata
