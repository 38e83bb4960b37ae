// Writes Llama-shaped models with seeded random weights and a real tokenizer copied
// from a vocabulary GGUF: the models the benchmarks run on, at realistic shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata {

// Mixture-of-experts shape; n_experts == 0 = dense.
struct MoePreset {
  int64_t n_experts = 0, n_experts_used = 0, expert_ffn_dim = 0;
  int64_t shared_ffn_dim = 0;  // 0 = no shared expert
  int64_t n_dense_lead = 0;    // leading dense layers (deepseek2)
};

// Multi-latent attention shape (deepseek2 only).
struct MlaPreset {
  int64_t q_lora_rank = 0;  // 0 = plain attn_q
  int64_t kv_lora_rank = 0, qk_nope_dim = 0, qk_rope_dim = 0, v_head_dim = 0;
  bool fused_kv_b = false;  // write the legacy attn_kv_b instead of attn_k_b / attn_v_b
};

struct ModelPreset {
  std::string name;
  int64_t dim, ffn_dim, n_layers, n_heads, n_kv_heads, context_length;
  float rope_base;
  std::string arch = "llama";  // llama, qwen3, qwen2moe, qwen3moe, deepseek2
  MoePreset moe;
  MlaPreset mla;
};

// Presets: tiny and tiny-256 (tests; tiny-256 divides into K-quant blocks), llama-1b
// (TinyLlama-1.1B's shape), llama-8b (Llama-3-8B's shape); MoE and MLA test shapes
// (mixtral-tiny, qwen2moe-tiny, qwen3moe-tiny, deepseek2-tiny, deepseek2-tiny-fused) and
// benchmark shapes (qwen3moe-1b: 32 experts, top-4, 0.9 G parameters, 0.19 G active;
// qwen3-active and qwen3-total: dense with its active and its total FFN size;
// deepseek2-1b: MLA with kv_lora_rank 512). "induction" is not a shape but the
// hand-built retrieval model of induction_model.h (own vocabulary; listed by preset_names(),
// unknown to find_preset()).
const ModelPreset& find_preset(const std::string& name);
std::vector<std::string> preset_names();
inline constexpr const char* kInductionPreset = "induction";
// The induction circuit padded to a 1B model's bytes per token (16 layers, Q4_0 padding).
inline constexpr const char* kInduction1bPreset = "induction-1b";

struct MakeModelOptions {
  std::string preset = "tiny";
  std::string output_path;
  std::string vocab_path;  // a GGUF whose tokenizer.* metadata is copied
  DType type = DType::F32;
  uint64_t seed = 0;
  int64_t context_length = 0;  // 0 = the preset's
  std::string head_map_path;   // induction preset: also write the ground-truth head map JSON
};

void make_model(const MakeModelOptions& options);

}  // namespace strata
