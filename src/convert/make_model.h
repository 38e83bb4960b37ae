// Writes Llama-shaped models with seeded random weights and a real tokenizer copied
// from a vocabulary GGUF: the models the benchmarks run on, at realistic shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace strata {

struct ModelPreset {
  std::string name;
  int64_t dim, ffn_dim, n_layers, n_heads, n_kv_heads, context_length;
  float rope_base;
};

// Presets: tiny and tiny-256 (tests; tiny-256 divides into K-quant blocks), llama-1b
// (TinyLlama-1.1B's shape), llama-8b (Llama-3-8B's shape). "induction" is not a shape but the
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
