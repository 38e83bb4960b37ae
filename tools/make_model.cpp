// strata make-model OUT.gguf --preset NAME [--type T] [--seed S] [--vocab-from VOCAB.gguf]
//                   [--head-map OUT.json] (induction preset)
#include "convert/make_model.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "convert/induction_model.h"
#include "core/error.h"
#include "tools/commands.h"

namespace strata::tools {

void register_make_model(CLI::App& app) {
  struct Flags {
    MakeModelOptions opt;
    std::string type = "f32";
  };
  auto f = std::make_shared<Flags>();
  std::string presets;
  for (const auto& n : preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  auto* cmd = app.add_subcommand("make-model", "write a model with seeded random weights");
  cmd->add_option("output", f->opt.output_path, "output GGUF")->required();
  cmd->add_option("--preset", f->opt.preset, "shape: " + presets)->capture_default_str();
  cmd->add_option(
         "--type", f->type,
         "f32, f16, bf16 or a quantized type (q8_0, q4_0, q5_k, iq4_xs, ...; see quantize)")
      ->capture_default_str();
  cmd->add_option("--seed", f->opt.seed, "weight seed")->capture_default_str();
  cmd->add_option("--ctx", f->opt.context_length, "context length (default: the preset's)");
  cmd->add_option("--head-map", f->opt.head_map_path,
                  "induction preset: write the ground-truth head map JSON here (retrieval head "
                  "full, every other KV head streaming)");
  cmd->add_option("--vocab-from", f->opt.vocab_path,
                  "GGUF whose tokenizer is copied (default: $STRATA_SHARED or ../shared, "
                  "vocab/ggml-vocab-llama-spm.gguf)");
  cmd->callback([f] {
    const auto type = dtype_from_name(f->type);
    if (!type) throw Error("--type: unknown type '" + f->type + "'");
    f->opt.type = *type;
    if (f->opt.vocab_path.empty() && f->opt.preset != kInductionPreset &&
        f->opt.preset != kInduction1bPreset) {
      const char* env = std::getenv("STRATA_SHARED");
      f->opt.vocab_path = std::string(env ? env : "../shared") + "/vocab/ggml-vocab-llama-spm.gguf";
    }
    make_model(f->opt);
    std::fprintf(stderr, "wrote %s\n", f->opt.output_path.c_str());
    if (f->opt.preset == kInductionPreset) {
      const auto& info = induction_model_info();
      std::fprintf(
          stderr, "retrieval head: layer %lld, kv head %lld (query heads %lld-%lld); %s = [%lld]\n",
          static_cast<long long>(info.retrieval_layer),
          static_cast<long long>(info.retrieval_kv_head),
          static_cast<long long>(info.retrieval_kv_head * (info.n_heads / info.n_kv_heads)),
          static_cast<long long>((info.retrieval_kv_head + 1) * (info.n_heads / info.n_kv_heads) -
                                 1),
          kInductionRetrievalHeadsKey,
          static_cast<long long>(info.retrieval_layer * info.n_kv_heads + info.retrieval_kv_head));
      if (!f->opt.head_map_path.empty())
        std::fprintf(stderr, "wrote %s\n", f->opt.head_map_path.c_str());
    }
  });
}

}  // namespace strata::tools
