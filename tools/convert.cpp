// strata convert llama2c CHECKPOINT.bin TOKENIZER.bin OUT.gguf
#include <cstdio>
#include <memory>

#include "convert/llama2c.h"
#include "tools/commands.h"

namespace strata::tools {

void register_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "convert other model formats to GGUF");
  cmd->require_subcommand(1);
  auto opt = std::make_shared<Llama2cConvertOptions>();
  auto* l2c = cmd->add_subcommand("llama2c", "llama2.c checkpoint + tokenizer -> GGUF (llama)");
  l2c->add_option("checkpoint", opt->checkpoint_path, "llama2.c checkpoint (.bin)")->required();
  l2c->add_option("tokenizer", opt->tokenizer_path, "llama2.c tokenizer (.bin)")->required();
  l2c->add_option("output", opt->output_path, "output GGUF")->required();
  l2c->add_option("--name", opt->model_name, "general.name (default: checkpoint file stem)");
  l2c->callback([opt] {
    convert_llama2c(*opt);
    std::fprintf(stderr, "wrote %s\n", opt->output_path.c_str());
  });
}

}  // namespace strata::tools
