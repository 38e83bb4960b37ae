// strata info MODEL.gguf: architecture, shapes, tensor types, size.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "model/model.h"
#include "tools/commands.h"

namespace strata::tools {

void register_info(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("info", "print a model's architecture, shapes and tensor types");
  cmd->add_option("model", *path, "model GGUF")->required();
  cmd->callback([path] {
    auto model = Model::load(*path);
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
    std::printf("heads:          %lld (kv %lld, head dim %lld)\n", static_cast<long long>(c.n_heads),
                static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim));
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
    std::printf("kv per token:   %lld bytes (f32), %lld bytes (f16)\n",
                static_cast<long long>(2 * c.n_layers * c.n_kv_heads * c.head_dim * 4),
                static_cast<long long>(2 * c.n_layers * c.n_kv_heads * c.head_dim * 2));
    for (const auto& [type, e] : by_type) {
      std::printf("tensors %-6s  %d (%.2f MiB)\n", type.c_str(), e.first,
                  static_cast<double>(e.second) / (1 << 20));
    }
  });
}

}  // namespace strata::tools
