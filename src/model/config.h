// Model hyper-parameters, read from GGUF metadata (`{arch}.*` keys).
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.h"

namespace strata {

enum class RopeLayout { kInterleaved, kNeox };

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
};

// Reads and validates the hyper-parameters; the architecture must be registered.
ModelConfig config_from_gguf(const gguf::GgufFile& file);

}  // namespace strata
