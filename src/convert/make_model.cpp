#include "convert/make_model.h"

#include <cmath>
#include <fstream>
#include <vector>

#include "convert/induction_model.h"
#include "convert/quantize.h"
#include "core/error.h"
#include "core/splitmix.h"
#include "gguf/gguf.h"
#include "kernels/quant/traits.h"

namespace strata {
namespace {

const std::vector<ModelPreset>& presets() {
  static const std::vector<ModelPreset> p = {
      {"tiny", 128, 384, 2, 4, 2, 4096, 10000.0f},
      // tiny with rows of 256 and 768, so every matrix divides into K-quant super-blocks.
      {"tiny-256", 256, 768, 2, 4, 2, 4096, 10000.0f},
      {"llama-1b", 2048, 5632, 22, 32, 4, 2048, 10000.0f},
      {"llama-8b", 4096, 14336, 32, 32, 8, 8192, 500000.0f},
  };
  return p;
}

using Rng = SplitMix64;

uint64_t tensor_seed(uint64_t seed, const std::string& name) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

const ModelPreset& find_preset(const std::string& name) {
  for (const auto& p : presets()) {
    if (p.name == name) return p;
  }
  std::string known;
  for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw Error("unknown preset '" + name + "' (known: " + known + ")");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  names.push_back(kInductionPreset);
  names.push_back(kInduction1bPreset);
  return names;
}

void make_model(const MakeModelOptions& opt) {
  if (opt.preset == kInductionPreset || opt.preset == kInduction1bPreset) {
    InductionModelOptions io;
    io.output_path = opt.output_path;
    io.type = opt.type;
    io.seed = opt.seed;
    io.context_length = opt.context_length;
    if (opt.preset == kInduction1bPreset) {
      // llama-1b's residual (2048) and bytes per token: 16 layers of a 2048 x 11264 FFN in
      // Q4_0, about its 637 MB, so verifying k tokens costs what it costs there.
      io.pad_layers = 14;
      io.dim = 2048;
      io.ffn_dim = 11264;
      if (!opt.head_map_path.empty())
        throw Error("--head-map: only the (unpadded) induction preset has a head map");
    }
    make_induction_model(io);
    if (!opt.head_map_path.empty()) {
      std::ofstream out(opt.head_map_path);
      out << induction_head_map_json();
      if (!out) throw Error(opt.head_map_path + ": cannot write the head map");
    }
    return;
  }
  if (!opt.head_map_path.empty())
    throw Error("--head-map: only the induction preset has a head map");
  const ModelPreset& p = find_preset(opt.preset);
  const auto vocab = gguf::GgufFile::open(opt.vocab_path);
  if (!vocab.has("tokenizer.ggml.tokens")) {
    throw Error(opt.vocab_path + ": has no tokenizer.ggml.tokens to copy");
  }
  const auto n_vocab = static_cast<int64_t>(vocab.get_string_array("tokenizer.ggml.tokens").size());
  const int64_t ctx = opt.context_length > 0 ? opt.context_length : p.context_length;
  const int64_t head_dim = p.dim / p.n_heads;

  gguf::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("general.name", "strata-random-" + p.name);
  w.set_u32("general.file_type", file_type_for(opt.type));
  w.set_u32("llama.context_length", static_cast<uint32_t>(ctx));
  w.set_u32("llama.embedding_length", static_cast<uint32_t>(p.dim));
  w.set_u32("llama.block_count", static_cast<uint32_t>(p.n_layers));
  w.set_u32("llama.feed_forward_length", static_cast<uint32_t>(p.ffn_dim));
  w.set_u32("llama.attention.head_count", static_cast<uint32_t>(p.n_heads));
  w.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(p.n_kv_heads));
  w.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(head_dim));
  w.set_f32("llama.rope.freq_base", p.rope_base);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32("llama.vocab_size", static_cast<uint32_t>(n_vocab));
  for (const auto& [key, value] : vocab.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, value);
  }

  // Weights ~ U(-a, a) with a = sqrt(3 / fan_in), i.e. variance 1/fan_in, so activations
  // keep their scale through every layer; norm weights are 1.
  auto add_matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const DType type = choose_tensor_type({cols, rows}, opt.type, name == "output.weight");
    const float amp = std::sqrt(3.0f / static_cast<float>(cols));
    const uint64_t seed = tensor_seed(opt.seed, name);
    w.add_tensor_lazy(name, type, {cols, rows}, [=](uint8_t* dst) {
      Rng rng(seed);
      std::vector<float> row(static_cast<size_t>(cols));
      const auto& traits = kernels::type_traits(type);
      const size_t row_bytes =
          static_cast<size_t>(cols / dtype_info(type).block_size) * dtype_info(type).type_size;
      for (int64_t r = 0; r < rows; ++r) {
        for (auto& x : row) x = amp * rng.symmetric();
        traits.from_float(row.data(), dst + static_cast<size_t>(r) * row_bytes, cols);
      }
    });
  };
  auto add_ones = [&](const std::string& name, int64_t n) {
    std::vector<float> ones(static_cast<size_t>(n), 1.0f);
    w.add_tensor(name, DType::F32, {n}, ones.data(), ones.size() * sizeof(float));
  };

  add_matrix("token_embd.weight", n_vocab, p.dim);
  for (int64_t l = 0; l < p.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_ones(b + "attn_norm.weight", p.dim);
    add_matrix(b + "attn_q.weight", p.n_heads * head_dim, p.dim);
    add_matrix(b + "attn_k.weight", p.n_kv_heads * head_dim, p.dim);
    add_matrix(b + "attn_v.weight", p.n_kv_heads * head_dim, p.dim);
    add_matrix(b + "attn_output.weight", p.dim, p.n_heads * head_dim);
    add_ones(b + "ffn_norm.weight", p.dim);
    add_matrix(b + "ffn_gate.weight", p.ffn_dim, p.dim);
    add_matrix(b + "ffn_up.weight", p.ffn_dim, p.dim);
    add_matrix(b + "ffn_down.weight", p.dim, p.ffn_dim);
  }
  add_ones("output_norm.weight", p.dim);
  add_matrix("output.weight", n_vocab, p.dim);
  w.write(opt.output_path);
}

}  // namespace strata
