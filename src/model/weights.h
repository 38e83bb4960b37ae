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
};

struct ModelWeights {
  WeightMatrix token_embd;               // (n_vocab, dim)
  std::vector<LayerWeights> layers;      // (n_layers)
  std::vector<float> output_norm;        // (dim)
  WeightMatrix output;                   // (n_vocab, dim); token_embd when tied
  std::vector<float> rope_freq_factors;  // (rope_dim/2) divisors of the RoPE frequencies; empty = 1
};

// Binds every tensor the config needs, checking names, shapes and types. Sets
// config.n_vocab from the embedding.
// With `repack`, each matrix used only by matmul (not the embedding, nor an output tied to
// it) whose type has a faster layout on this CPU (kernels::repacked_weight_type: Q4_0 and
// Q8_0 -> Q4_0_X16 and Q8_0_X16, Q6_K -> Q6_K_X16, with AVX2 or AVX-512) is
// rewritten in place in the file's memory and bound with
// that type. A read-only mapping (GgufFile::open) is never rewritten.
ModelWeights load_weights(gguf::GgufFile& file, ModelConfig& config, bool repack);

}  // namespace strata
