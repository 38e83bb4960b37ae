#include "model/config.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "model/arch/arch.h"

namespace strata {
namespace {

// Reads a positive integer hyper-parameter with an upper bound, naming the key on error.
int64_t read_dim(const gguf::GgufFile& f, const std::string& key, int64_t limit) {
  const uint64_t v = f.get_uint(key);
  if (v == 0 || v > static_cast<uint64_t>(limit)) {
    throw Error(f.name() + ": " + key + " = " + std::to_string(v) + " is out of range (1.." +
                std::to_string(limit) + ")");
  }
  return static_cast<int64_t>(v);
}

// A non-negative integer that may be absent (then `fallback`), at most `limit`.
int64_t read_count(const gguf::GgufFile& f, const std::string& key, int64_t fallback,
                   int64_t limit) {
  if (!f.has(key)) return fallback;
  const uint64_t v = f.get_uint(key);
  if (v > static_cast<uint64_t>(limit)) {
    throw Error(f.name() + ": " + key + " = " + std::to_string(v) + " is out of range (0.." +
                std::to_string(limit) + ")");
  }
  return static_cast<int64_t>(v);
}

// The expert_* keys. Whether a llama file has experts is its expert_count key; the
// MoE architectures must have one. The tensors' shapes are checked against these in
// load_weights, naming the tensor.
MoeConfig read_moe(const gguf::GgufFile& f, const ArchSpec& spec, const ModelConfig& c) {
  MoeConfig m;
  const std::string a = c.arch + ".";
  if (spec.experts == ArchSpec::Experts::kNone) return m;
  if (spec.experts == ArchSpec::Experts::kOptional && !f.has(a + "expert_count")) return m;
  if (spec.experts == ArchSpec::Experts::kOptional && f.get_uint(a + "expert_count") == 0 &&
      !f.find_tensor("blk.0.ffn_gate_inp.weight")) {
    return m;  // llama.cpp writes expert_count = 0 into some dense llama files
  }
  m.n_experts = read_dim(f, a + "expert_count", 1 << 12);
  m.n_experts_used = read_dim(f, a + "expert_used_count", m.n_experts);
  const int64_t default_ffn =
      c.arch == "qwen3moe" ? std::max<int64_t>(1, c.ffn_dim / m.n_experts_used) : c.ffn_dim;
  m.expert_ffn_dim = f.has(a + "expert_feed_forward_length")
                         ? read_dim(f, a + "expert_feed_forward_length", 1 << 18)
                         : default_ffn;
  m.shared_expert_gate = spec.shared_expert_gate;
  if (spec.shared_expert_gate) {
    m.shared_ffn_dim = f.has(a + "expert_shared_feed_forward_length")
                           ? read_dim(f, a + "expert_shared_feed_forward_length", 1 << 18)
                           : c.ffn_dim;
  } else {
    const int64_t n_shared = read_count(f, a + "expert_shared_count", 0, 64);
    m.shared_ffn_dim = n_shared * m.expert_ffn_dim;
  }
  m.n_dense_lead = read_count(f, a + "leading_dense_block_count", 0, c.n_layers);
  m.norm_weights = f.get_bool(a + "expert_weights_norm", spec.expert_norm_default);
  m.weights_scale = static_cast<float>(f.get_float(a + "expert_weights_scale", 1.0));
  if (m.weights_scale == 0.0f) m.weights_scale = 1.0f;  // llama.cpp's "unset"
  if (!std::isfinite(m.weights_scale) || m.weights_scale < 0.0f) {
    throw Error(f.name() + ": " + a + "expert_weights_scale must be finite and positive");
  }
  switch (f.get_uint(a + "expert_gating_func", 0)) {
    case 0:  // absent in DeepSeek-V2 files: softmax
    case 1:
      m.gating = ExpertGating::kSoftmax;
      break;
    case 2:
      m.gating = ExpertGating::kSigmoid;
      break;
    default:
      throw Error(f.name() + ": " + a +
                  "expert_gating_func = " + std::to_string(f.get_uint(a + "expert_gating_func")) +
                  " is not supported (1 softmax, 2 sigmoid)");
  }
  if (read_count(f, a + "expert_group_count", 0, 1 << 12) > 1) {
    throw Error(f.name() + ": " + a +
                "expert_group_count > 1 (DeepSeek-V3 group-limited routing) is not supported");
  }
  return m;
}

// deepseek2's attention.* keys. Split (MLA) files say head_count_kv = 1 and give the
// cached row as key_length = kv_lora_rank + rope dims, the per-head sizes as
// key_length_mla / value_length_mla; legacy files give the per-head sizes as
// key_length / value_length and carry the fused attn_kv_b.
MlaConfig read_mla(const gguf::GgufFile& f, ModelConfig& c) {
  MlaConfig m;
  const std::string a = c.arch + ".";
  const std::string n = f.name() + ": ";
  m.kv_lora_rank = read_dim(f, a + "attention.kv_lora_rank", 1 << 14);
  m.q_lora_rank = read_count(f, a + "attention.q_lora_rank", 0, 1 << 16);
  const int64_t rope = c.rope_dim;
  m.split_kv_b = f.has(a + "attention.key_length_mla");
  const std::string k_key = m.split_kv_b ? "attention.key_length_mla" : "attention.key_length";
  const std::string v_key = m.split_kv_b ? "attention.value_length_mla" : "attention.value_length";
  const int64_t k_len = read_dim(f, a + k_key, 4096);
  m.v_head_dim = read_dim(f, a + v_key, 4096);
  if (k_len <= rope) {
    throw Error(n + a + k_key + " (" + std::to_string(k_len) +
                ") must exceed rope.dimension_count (" + std::to_string(rope) + ")");
  }
  m.qk_nope_dim = k_len - rope;
  if (m.split_kv_b && f.has(a + "attention.key_length") &&
      static_cast<int64_t>(f.get_uint(a + "attention.key_length")) != m.kv_lora_rank + rope) {
    throw Error(n + a + "attention.key_length (" +
                std::to_string(f.get_uint(a + "attention.key_length")) +
                ") must be kv_lora_rank + rope.dimension_count (" +
                std::to_string(m.kv_lora_rank + rope) + ") in a file with key_length_mla");
  }
  // The cache holds one latent row per token: one "KV head" of kv_lora_rank + rope dims.
  c.n_kv_heads = 1;
  c.head_dim = m.kv_lora_rank + rope;
  return m;
}

// YaRN's keys; any other scaling type but linear and none is refused.
YarnConfig read_yarn(const gguf::GgufFile& f, const ModelConfig& c) {
  YarnConfig y;
  const std::string a = c.arch + ".";
  const std::string type = f.get_string(a + "rope.scaling.type", "none");
  if (type == "none" || type == "linear") return y;
  if (type != "yarn") {
    throw Error(f.name() + ": " + a + "rope.scaling.type '" + type +
                "' is not supported (none, linear, yarn)");
  }
  y.factor = static_cast<float>(f.get_float(a + "rope.scaling.factor", 1.0));
  y.original_context =
      read_count(f, a + "rope.scaling.original_context_length", c.context_length, 1 << 24);
  // The converter stores 0.1 * mscale_all_dim (llama.cpp divides it back out).
  y.log_multiplier =
      static_cast<float>(f.get_float(a + "rope.scaling.yarn_log_multiplier", 0.0) / 0.1);
  y.beta_fast = static_cast<float>(f.get_float(a + "rope.scaling.yarn_beta_fast", 32.0));
  y.beta_slow = static_cast<float>(f.get_float(a + "rope.scaling.yarn_beta_slow", 1.0));
  if (!(y.factor >= 1.0f) || !std::isfinite(y.factor) || y.original_context <= 0 ||
      !std::isfinite(y.log_multiplier) || !(y.beta_fast > y.beta_slow) || !(y.beta_slow > 0)) {
    throw Error(f.name() + ": " + a + "rope.scaling (yarn) factor must be >= 1, " +
                "original_context_length positive, beta_fast > beta_slow > 0");
  }
  if (y.factor == 1.0f) y.factor = 0.0f;  // no extension: plain RoPE
  return y;
}

}  // namespace

ModelConfig config_from_gguf(const gguf::GgufFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const ArchSpec* spec = find_arch(c.arch);
  if (!spec) {
    throw Error(f.name() + ": unsupported architecture '" + c.arch +
                "' (strata supports llama, qwen2, qwen3, qwen2moe, qwen3moe, deepseek2)");
  }
  c.name = f.get_string("general.name", "");
  const std::string a = c.arch + ".";
  c.dim = read_dim(f, a + "embedding_length", 1 << 16);
  c.n_layers = read_dim(f, a + "block_count", 1024);
  c.n_heads = read_dim(f, a + "attention.head_count", 1024);
  c.n_kv_heads = f.has(a + "attention.head_count_kv")
                     ? read_dim(f, a + "attention.head_count_kv", 1024)
                     : c.n_heads;
  c.ffn_dim = read_dim(f, a + "feed_forward_length", 1 << 18);
  c.context_length = read_dim(f, a + "context_length", 1 << 24);
  c.head_dim = f.has(a + "attention.key_length") ? read_dim(f, a + "attention.key_length", 4096)
                                                 : c.dim / c.n_heads;
  c.rope_dim = f.has(a + "rope.dimension_count") ? read_dim(f, a + "rope.dimension_count", 4096)
                                                 : c.head_dim;
  c.rms_eps = static_cast<float>(f.get_float(a + "attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_base = static_cast<float>(f.get_float(a + "rope.freq_base", 10000.0));
  if (f.get_string(a + "rope.scaling.type", "none") == "linear") {
    c.rope_linear_scale = static_cast<float>(f.get_float(a + "rope.scaling.factor", 1.0));
  }
  c.rope_layout = spec->rope_layout;
  c.qkv_bias = spec->qkv_bias;
  c.qk_norm = spec->qk_norm;
  c.moe = read_moe(f, *spec, c);
  if (spec->mla) c.mla = read_mla(f, c);
  c.yarn = read_yarn(f, c);

  const std::string n = f.name() + ": ";
  if (c.n_heads % c.n_kv_heads != 0) {
    throw Error(n + "attention.head_count (" + std::to_string(c.n_heads) +
                ") is not a multiple of head_count_kv (" + std::to_string(c.n_kv_heads) + ")");
  }
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) {
    throw Error(n + "rope.dimension_count must be even and <= the head size");
  }
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
    throw Error(n + "layer_norm_rms_epsilon out of range");
  if (!(c.rope_base > 0.0f)) throw Error(n + "rope.freq_base must be positive");
  if (!(c.rope_linear_scale > 0.0f)) throw Error(n + "rope.scaling.factor must be positive");
  return c;
}

}  // namespace strata
