// strata info MODEL.gguf: architecture, shapes, tensor types, size.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "eval/head_map.h"
#include "kernels/quant/traits.h"
#include "kv/kv_quant.h"
#include "model/model.h"
#include "tools/commands.h"

namespace strata::tools {

void register_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto sparse = std::make_shared<HeadMapOptions>();
  auto* cmd = app.add_subcommand("info", "print a model's architecture, shapes and tensor types");
  cmd->add_option("model", *path, "model GGUF")->required();
  cmd->add_option("--sparse-heads", sparse->map_path,
                  "also report KV bytes per token under this head map");
  cmd->add_option("--retrieval-ratio", sparse->retrieval_ratio, "fraction of KV heads kept full");
  cmd->add_option("--sink", sparse->sink, "streaming heads: first tokens kept");
  cmd->add_option("--window", sparse->window, "streaming heads: last tokens kept");
  cmd->callback([path, sparse] {
    auto model = Model::load(*path, Model::WeightMemory::mmap);
    const auto& c = model->config();
    const auto& f = model->file();
    std::map<std::string, std::pair<int, uint64_t>> by_type;  // type -> (tensors, bytes)
    uint64_t params = 0, bytes = 0;
    for (const auto& t : f.tensors()) {
      auto& e = by_type[std::string(dtype_name(t.type))];
      ++e.first;
      e.second += t.n_bytes;
      params += t.n_elements;
      bytes += t.n_bytes;
    }
    std::printf("file:           %s (GGUF v%u, %.2f MiB)\n", path->c_str(), f.version(),
                static_cast<double>(f.file_size()) / (1 << 20));
    std::printf("name:           %s\n", c.name.c_str());
    std::printf("architecture:   %s\n", c.arch.c_str());
    std::printf("vocab:          %lld\n", static_cast<long long>(c.n_vocab));
    std::printf("dim:            %lld\n", static_cast<long long>(c.dim));
    std::printf("layers:         %lld\n", static_cast<long long>(c.n_layers));
    std::printf("heads:          %lld (kv %lld, head dim %lld)\n",
                static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads),
                static_cast<long long>(c.head_dim));
    std::printf("ffn:            %lld\n", static_cast<long long>(c.ffn_dim));
    std::printf("context:        %lld\n", static_cast<long long>(c.context_length));
    std::printf("rope:           %s, base %g, dims %lld\n",
                c.rope_layout == RopeLayout::kNeox ? "neox" : "interleaved", c.rope_base,
                static_cast<long long>(c.rope_dim));
    std::printf("rms eps:        %g\n", c.rms_eps);
    std::printf("parameters:     %.3f M\n", static_cast<double>(params) / 1e6);
    std::printf("weights:        %.2f MiB (%.2f MiB read per token)\n",
                static_cast<double>(bytes) / (1 << 20),
                static_cast<double>(model->weight_bytes_per_token()) / (1 << 20));
    if (c.moe.enabled()) {
      const auto& m = c.moe;
      std::printf("experts:        %lld, %lld used per token, ffn %lld",
                  static_cast<long long>(m.n_experts), static_cast<long long>(m.n_experts_used),
                  static_cast<long long>(m.expert_ffn_dim));
      if (m.shared_ffn_dim > 0)
        std::printf(", shared ffn %lld%s", static_cast<long long>(m.shared_ffn_dim),
                    m.shared_expert_gate ? " (gated)" : "");
      if (m.n_dense_lead > 0)
        std::printf(", first %lld layers dense", static_cast<long long>(m.n_dense_lead));
      std::printf("\n");
      std::printf("routing:        %s, top-%lld%s, scale %g\n",
                  m.gating == ExpertGating::kSoftmax ? "softmax" : "sigmoid",
                  static_cast<long long>(m.n_experts_used), m.norm_weights ? " renormalised" : "",
                  m.weights_scale);
    }
    std::printf("active params:  %.3f M per token (embedding row excluded)\n",
                model->active_params_per_token() / 1e6);
    if (c.mla.enabled()) {
      const auto& m = c.mla;
      std::printf(
          "attention:      MLA, kv_lora_rank %lld, q_lora_rank %lld, nope %lld, rope %lld, v "
          "%lld%s\n",
          static_cast<long long>(m.kv_lora_rank), static_cast<long long>(m.q_lora_rank),
          static_cast<long long>(m.qk_nope_dim), static_cast<long long>(c.rope_dim),
          static_cast<long long>(m.v_head_dim), m.split_kv_b ? "" : " (fused attn_kv_b)");
      std::printf(
          "kv per token:   %zu bytes (f32), %zu bytes (f16/bf16): (kv_lora_rank + rope) x layers x "
          "element; "
          "per-head K/V would take %lld bytes (f16)\n",
          model->kv_bytes_per_token(4), model->kv_bytes_per_token(2),
          static_cast<long long>(c.n_layers * c.n_heads *
                                 (m.qk_nope_dim + c.rope_dim + m.v_head_dim) * 2));
    } else {
      // Quantized types carry their f16 scales (kv/kv_quant.h); they need head_dim % 16 == 0.
      const auto quant = [&](DType t) {
        return static_cast<size_t>(2 * c.n_layers * c.n_kv_heads) *
               kv_quant::row_bytes(t, c.head_dim);
      };
      if (kv_quant::group_size(c.head_dim) > 0) {
        std::printf(
            "kv per token:   %zu bytes (f32), %zu bytes (f16/bf16), %zu bytes (q8_0), %zu bytes "
            "(q4_0)\n",
            model->kv_bytes_per_token(4), model->kv_bytes_per_token(2), quant(DType::Q8_0),
            quant(DType::Q4_0));
      } else {
        std::printf(
            "kv per token:   %zu bytes (f32), %zu bytes (f16/bf16); q8_0/q4_0 need head_dim %% 16 "
            "== 0\n",
            model->kv_bytes_per_token(4), model->kv_bytes_per_token(2));
      }
    }
    if (c.yarn.factor > 0.0f) {
      std::printf("rope scaling:   yarn, factor %g, original context %lld, mscale_all_dim %g\n",
                  c.yarn.factor, static_cast<long long>(c.yarn.original_context),
                  c.yarn.log_multiplier);
    }
    if (sparse->enabled()) {
      // Per sequence: full heads keep every token; streaming heads keep their sink
      // blocks and the blocks covering the window (16-token blocks, as the engine uses).
      const HeadModes m = resolve_head_modes(*sparse, c.n_layers, c.n_kv_heads);
      const int64_t bs = 16;
      const int64_t per_head_token = 2 * c.head_dim * 4;
      const int64_t bounded = ((m.sink + bs - 1) / bs + (m.window + bs - 1) / bs + 1) * bs;
      std::printf("sparse heads:   %s\n", m.describe().c_str());
      for (int64_t ctx : {int64_t{4096}, int64_t{16384}, int64_t{32768}}) {
        const double dense = static_cast<double>(c.n_layers * c.n_kv_heads * per_head_token);
        const double sparse_bytes =
            static_cast<double>(m.n_full() * per_head_token * ctx +
                                m.n_streaming() * per_head_token * std::min(ctx, bounded)) /
            static_cast<double>(ctx);
        std::printf(
            "kv per token:   %.0f bytes (f32) at context %lld with the head map (%.1f%% of "
            "dense)\n",
            sparse_bytes, static_cast<long long>(ctx), 100.0 * sparse_bytes / dense);
      }
    }
    for (const auto& [type, e] : by_type) {
      std::printf("tensors %-6s  %d (%.2f MiB)\n", type.c_str(), e.first,
                  static_cast<double>(e.second) / (1 << 20));
    }
    // What this machine runs them with (STRATA_NO_AVX512 and the like lower it).
    std::printf("kernels:        %s\n", kernels::cpu_kernels_name().c_str());
  });
}

}  // namespace strata::tools
