// What distinguishes one Llama-family architecture from another. Each family lives in
// its own small file under model/arch/ and registers one ArchSpec; the shared layer
// code in model/ reads these fields instead of branching on names.
#pragma once

#include <string_view>

#include "model/config.h"

namespace strata {

struct ArchSpec {
  std::string_view name;  // value of general.architecture
  RopeLayout rope_layout;
  bool qkv_bias;  // attn_{q,k,v}.bias tensors
  bool qk_norm;   // per-head RMSNorm of Q and K before RoPE (attn_{q,k}_norm)
  // Experts: none; optional (llama: Mixtral files carry expert_count); or required.
  enum class Experts { kNone, kOptional, kRequired } experts = Experts::kNone;
  bool expert_norm_default = false;  // expert_weights_norm when the key is absent
  bool shared_expert_gate = false;   // qwen2moe's gated shared expert
  bool mla = false;                  // deepseek2's multi-latent attention
};

const ArchSpec& llama_arch();
const ArchSpec& qwen2_arch();
const ArchSpec& qwen3_arch();
const ArchSpec& qwen2moe_arch();
const ArchSpec& qwen3moe_arch();
const ArchSpec& deepseek2_arch();

// The spec for `name`, or nullptr if strata does not support that architecture.
const ArchSpec* find_arch(std::string_view name);

}  // namespace strata
