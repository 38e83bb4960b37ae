// Model hyper-parameters, read from GGUF metadata (`{arch}.*` keys).
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.h"

namespace strata {

enum class RopeLayout { kInterleaved, kNeox };

// How router logits become expert probabilities (`{arch}.expert_gating_func`).
enum class ExpertGating { kSoftmax, kSigmoid };

// Mixture-of-experts FFN (`{arch}.expert_*` keys). n_experts == 0: every FFN is dense.
struct MoeConfig {
  int64_t n_experts = 0;
  int64_t n_experts_used = 0;       // top-k
  int64_t expert_ffn_dim = 0;       // rows of each expert's gate/up matrix
  int64_t shared_ffn_dim = 0;       // the shared expert's (0 = none)
  bool shared_expert_gate = false;  // qwen2moe: sigmoid(ffn_gate_inp_shexp . x) scales it
  int64_t n_dense_lead = 0;         // leading layers with a dense FFN (deepseek2)
  ExpertGating gating = ExpertGating::kSoftmax;
  bool norm_weights = false;  // chosen weights divided by their sum
  float weights_scale = 1.0f;

  bool enabled() const { return n_experts > 0; }
  bool layer_is_moe(int64_t layer) const { return enabled() && layer >= n_dense_lead; }
};

// Multi-latent attention (deepseek2). kv_lora_rank == 0: ordinary attention. The cache
// row of a token is its normed latent c_kv (kv_lora_rank) then its RoPE key (rope_dim).
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0 = a plain attn_q
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_dim = 0;  // per head: query/key dims without position
  int64_t v_head_dim = 0;
  bool split_kv_b = true;  // attn_k_b / attn_v_b; false = the legacy fused attn_kv_b

  bool enabled() const { return kv_lora_rank > 0; }
};

// YaRN context extension (`rope.scaling.type` yarn): frequencies past the original
// context are interpolated and attention logits rescaled (ggml's rope_yarn).
struct YarnConfig {
  float factor = 0.0f;  // 0 = off
  int64_t original_context = 0;
  float log_multiplier = 0.0f;  // DeepSeek's mscale_all_dim (0.1 * it in the file)
  float beta_fast = 32.0f, beta_slow = 1.0f;
};

struct ModelConfig {
  std::string arch;  // general.architecture
  std::string name;  // general.name (may be empty)
  int64_t n_vocab = 0;
  int64_t dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t ffn_dim = 0;
  int64_t context_length = 0;
  int64_t rope_dim = 0;  // dims rotated per head (<= head_dim)
  float rms_eps = 1e-5f;
  float rope_base = 10000.0f;
  float rope_linear_scale = 1.0f;  // positions are divided by this (rope.scaling.type linear)
  RopeLayout rope_layout = RopeLayout::kInterleaved;
  bool qkv_bias = false;
  bool qk_norm = false;
  MoeConfig moe;
  MlaConfig mla;
  YarnConfig yarn;
};

// Reads and validates the hyper-parameters; the architecture must be registered.
ModelConfig config_from_gguf(const gguf::GgufFile& file);

}  // namespace strata
