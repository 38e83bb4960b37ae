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

ModelPreset with_moe(ModelPreset p, std::string arch, MoePreset moe) {
  p.arch = std::move(arch);
  p.moe = moe;
  return p;
}

const std::vector<ModelPreset>& presets() {
  static const std::vector<ModelPreset> p = [] {
    const ModelPreset tiny{"tiny", 128, 384, 2, 4, 2, 4096, 10000.0f, "llama", {}, {}};
    std::vector<ModelPreset> v = {
        tiny,
        // tiny with rows of 256 and 768, so every matrix divides into K-quant super-blocks.
        {"tiny-256", 256, 768, 2, 4, 2, 4096, 10000.0f, "llama", {}, {}},
        {"llama-1b", 2048, 5632, 22, 32, 4, 2048, 10000.0f, "llama", {}, {}},
        {"llama-8b", 4096, 14336, 32, 32, 8, 8192, 500000.0f, "llama", {}, {}},
    };
    auto named = [](ModelPreset p, std::string name) {
      p.name = std::move(name);
      return p;
    };
    // Mixtral's experts are feed_forward_length wide.
    ModelPreset mixtral = with_moe(named(tiny, "mixtral-tiny"), "llama", {4, 2, 128});
    mixtral.ffn_dim = 128;
    v.push_back(mixtral);
    v.push_back(with_moe(named(tiny, "qwen2moe-tiny"), "qwen2moe", {8, 2, 64, 128}));
    v.push_back(with_moe(named(tiny, "qwen3moe-tiny"), "qwen3moe", {8, 2, 64}));
    ModelPreset ds = with_moe(named(tiny, "deepseek2-tiny"), "deepseek2", {8, 2, 64, 64, 1});
    ds.n_layers = 3;
    ds.n_kv_heads = ds.n_heads;
    ds.mla = {64, 64, 32, 32, 32, false};
    v.push_back(ds);
    ModelPreset fused = named(ds, "deepseek2-tiny-fused");
    fused.mla.q_lora_rank = 0;
    fused.mla.fused_kv_b = true;
    v.push_back(fused);
    // Benchmark shapes: weights dominate, ~1 GB at Q8_0.
    const ModelPreset base{"qwen3-active", 1024,       2048,    16, 16, 4,
                           32768,          1000000.0f, "qwen3", {}, {}};
    v.push_back(base);
    v.push_back(named(with_moe(base, "qwen3moe", {32, 4, 512}), "qwen3moe-1b"));
    ModelPreset total = named(base, "qwen3-total");
    total.ffn_dim = 32 * 512;
    v.push_back(total);
    ModelPreset ds1b = with_moe(named(base, "deepseek2-1b"), "deepseek2", {16, 2, 512, 512, 1});
    ds1b.n_layers = 12;
    ds1b.n_kv_heads = ds1b.n_heads;
    ds1b.rope_base = 10000.0f;
    ds1b.mla = {384, 512, 64, 64, 64, false};
    v.push_back(ds1b);
    return v;
  }();
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
  const std::string a = p.arch + ".";
  const bool mla = p.arch == "deepseek2";
  const bool qk_norm = p.arch == "qwen3" || p.arch == "qwen3moe";
  const bool qkv_bias = p.arch == "qwen2moe";
  const int64_t rope_dim = mla ? p.mla.qk_rope_dim : head_dim;
  w.set_string("general.architecture", p.arch);
  w.set_string("general.name", "strata-random-" + p.name);
  w.set_u32("general.file_type", file_type_for(opt.type));
  w.set_u32(a + "context_length", static_cast<uint32_t>(ctx));
  w.set_u32(a + "embedding_length", static_cast<uint32_t>(p.dim));
  w.set_u32(a + "block_count", static_cast<uint32_t>(p.n_layers));
  w.set_u32(a + "feed_forward_length", static_cast<uint32_t>(p.ffn_dim));
  w.set_u32(a + "attention.head_count", static_cast<uint32_t>(p.n_heads));
  w.set_u32(a + "attention.head_count_kv",
            static_cast<uint32_t>(mla && !p.mla.fused_kv_b ? 1 : p.n_kv_heads));
  w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(rope_dim));
  w.set_f32(a + "rope.freq_base", p.rope_base);
  w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-5f);
  w.set_u32(a + "vocab_size", static_cast<uint32_t>(n_vocab));
  if (p.moe.n_experts > 0) {
    w.set_u32(a + "expert_count", static_cast<uint32_t>(p.moe.n_experts));
    w.set_u32(a + "expert_used_count", static_cast<uint32_t>(p.moe.n_experts_used));
    if (p.arch != "llama")
      w.set_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(p.moe.expert_ffn_dim));
    if (p.arch == "qwen2moe") {
      w.set_u32(a + "expert_shared_feed_forward_length",
                static_cast<uint32_t>(p.moe.shared_ffn_dim));
    }
  }
  if (mla) {
    const MlaPreset& m = p.mla;
    const int64_t n_shared = p.moe.shared_ffn_dim / p.moe.expert_ffn_dim;
    w.set_u32(a + "expert_shared_count", static_cast<uint32_t>(n_shared));
    w.set_u32(a + "leading_dense_block_count", static_cast<uint32_t>(p.moe.n_dense_lead));
    w.set_bool(a + "expert_weights_norm", true);
    w.set_f32(a + "expert_weights_scale", 1.0f);
    w.set_u32(a + "expert_gating_func", 1);
    // 0 = a plain attn_q (llama.cpp reads the key in every file but V2-Lite-sized ones).
    w.set_u32(a + "attention.q_lora_rank", static_cast<uint32_t>(m.q_lora_rank));
    w.set_u32(a + "attention.kv_lora_rank", static_cast<uint32_t>(m.kv_lora_rank));
    if (m.fused_kv_b) {
      w.set_u32(a + "attention.key_length", static_cast<uint32_t>(m.qk_nope_dim + m.qk_rope_dim));
      w.set_u32(a + "attention.value_length", static_cast<uint32_t>(m.v_head_dim));
    } else {
      w.set_u32(a + "attention.key_length", static_cast<uint32_t>(m.kv_lora_rank + m.qk_rope_dim));
      w.set_u32(a + "attention.value_length", static_cast<uint32_t>(m.kv_lora_rank));
      w.set_u32(a + "attention.key_length_mla",
                static_cast<uint32_t>(m.qk_nope_dim + m.qk_rope_dim));
      w.set_u32(a + "attention.value_length_mla", static_cast<uint32_t>(m.v_head_dim));
    }
  }
  for (const auto& [key, value] : vocab.metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) w.set_value(key, value);
  }

  // Weights ~ U(-a, a) with a = sqrt(3 / fan_in), i.e. variance 1/fan_in, so activations
  // keep their scale through every layer; norm weights are 1. A stack is `n` matrices
  // ([cols, rows, n] in GGUF order), each drawn like a matrix.
  auto add_stack = [&](const std::string& name, int64_t n, int64_t rows, int64_t cols) {
    const std::vector<int64_t> ne =
        n > 0 ? std::vector<int64_t>{cols, rows, n} : std::vector<int64_t>{cols, rows};
    const DType type = choose_tensor_type(ne, opt.type, name == "output.weight");
    const float amp = std::sqrt(3.0f / static_cast<float>(cols));
    const uint64_t seed = tensor_seed(opt.seed, name);
    const int64_t total_rows = rows * std::max<int64_t>(n, 1);
    w.add_tensor_lazy(name, type, ne, [=](uint8_t* dst) {
      Rng rng(seed);
      std::vector<float> row(static_cast<size_t>(cols));
      const auto& traits = kernels::type_traits(type);
      const size_t row_bytes =
          static_cast<size_t>(cols / dtype_info(type).block_size) * dtype_info(type).type_size;
      for (int64_t r = 0; r < total_rows; ++r) {
        for (auto& x : row) x = amp * rng.symmetric();
        traits.from_float(row.data(), dst + static_cast<size_t>(r) * row_bytes, cols);
      }
    });
  };
  auto add_matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    add_stack(name, 0, rows, cols);
  };
  auto add_filled = [&](const std::string& name, int64_t n, float value) {
    std::vector<float> v(static_cast<size_t>(n), value);
    w.add_tensor(name, DType::F32, {n}, v.data(), v.size() * sizeof(float));
  };
  auto add_ones = [&](const std::string& name, int64_t n) { add_filled(name, n, 1.0f); };
  // Small random vectors (biases, the shared-expert gate), so a wrong index shows.
  auto add_random_vector = [&](const std::string& name, int64_t n, float amp) {
    Rng rng(tensor_seed(opt.seed, name));
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = amp * rng.symmetric();
    w.add_tensor(name, DType::F32, {n}, v.data(), v.size() * sizeof(float));
  };

  add_matrix("token_embd.weight", n_vocab, p.dim);
  for (int64_t l = 0; l < p.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add_ones(b + "attn_norm.weight", p.dim);
    if (mla) {
      const MlaPreset& m = p.mla;
      const int64_t q_rows = p.n_heads * (m.qk_nope_dim + m.qk_rope_dim);
      if (m.q_lora_rank > 0) {
        add_matrix(b + "attn_q_a.weight", m.q_lora_rank, p.dim);
        add_ones(b + "attn_q_a_norm.weight", m.q_lora_rank);
        add_matrix(b + "attn_q_b.weight", q_rows, m.q_lora_rank);
      } else {
        add_matrix(b + "attn_q.weight", q_rows, p.dim);
      }
      add_matrix(b + "attn_kv_a_mqa.weight", m.kv_lora_rank + m.qk_rope_dim, p.dim);
      add_ones(b + "attn_kv_a_norm.weight", m.kv_lora_rank);
      if (m.fused_kv_b) {
        add_matrix(b + "attn_kv_b.weight", p.n_heads * (m.qk_nope_dim + m.v_head_dim),
                   m.kv_lora_rank);
      } else {
        add_stack(b + "attn_k_b.weight", p.n_heads, m.kv_lora_rank, m.qk_nope_dim);
        add_stack(b + "attn_v_b.weight", p.n_heads, m.v_head_dim, m.kv_lora_rank);
      }
      add_matrix(b + "attn_output.weight", p.dim, p.n_heads * m.v_head_dim);
    } else {
      add_matrix(b + "attn_q.weight", p.n_heads * head_dim, p.dim);
      add_matrix(b + "attn_k.weight", p.n_kv_heads * head_dim, p.dim);
      add_matrix(b + "attn_v.weight", p.n_kv_heads * head_dim, p.dim);
      add_matrix(b + "attn_output.weight", p.dim, p.n_heads * head_dim);
      if (qkv_bias) {
        add_random_vector(b + "attn_q.bias", p.n_heads * head_dim, 0.1f);
        add_random_vector(b + "attn_k.bias", p.n_kv_heads * head_dim, 0.1f);
        add_random_vector(b + "attn_v.bias", p.n_kv_heads * head_dim, 0.1f);
      }
      if (qk_norm) {
        add_ones(b + "attn_q_norm.weight", head_dim);
        add_ones(b + "attn_k_norm.weight", head_dim);
      }
    }
    add_ones(b + "ffn_norm.weight", p.dim);
    const MoePreset& e = p.moe;
    if (e.n_experts == 0 || l < e.n_dense_lead) {
      add_matrix(b + "ffn_gate.weight", p.ffn_dim, p.dim);
      add_matrix(b + "ffn_up.weight", p.ffn_dim, p.dim);
      add_matrix(b + "ffn_down.weight", p.dim, p.ffn_dim);
      continue;
    }
    add_matrix(b + "ffn_gate_inp.weight", e.n_experts, p.dim);
    add_stack(b + "ffn_gate_exps.weight", e.n_experts, e.expert_ffn_dim, p.dim);
    add_stack(b + "ffn_up_exps.weight", e.n_experts, e.expert_ffn_dim, p.dim);
    add_stack(b + "ffn_down_exps.weight", e.n_experts, p.dim, e.expert_ffn_dim);
    if (e.shared_ffn_dim > 0) {
      add_matrix(b + "ffn_gate_shexp.weight", e.shared_ffn_dim, p.dim);
      add_matrix(b + "ffn_up_shexp.weight", e.shared_ffn_dim, p.dim);
      add_matrix(b + "ffn_down_shexp.weight", p.dim, e.shared_ffn_dim);
      if (p.arch == "qwen2moe") add_random_vector(b + "ffn_gate_inp_shexp.weight", p.dim, 0.1f);
    }
  }
  add_ones("output_norm.weight", p.dim);
  add_matrix("output.weight", n_vocab, p.dim);
  w.write(opt.output_path);
}

}  // namespace strata
