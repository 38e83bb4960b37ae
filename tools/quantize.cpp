// strata quantize IN.gguf OUT.gguf --type q8_0|q4_0|q4_k|q6_k
#include "convert/quantize.h"

#include <cstdio>
#include <memory>
#include <string>

#include "core/error.h"
#include "tools/commands.h"

namespace strata::tools {

void register_quantize(CLI::App& app) {
  struct Flags {
    std::string in, out, type;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("quantize", "re-encode a model's weight matrices");
  cmd->add_option("input", f->in, "input GGUF")->required();
  cmd->add_option("output", f->out, "output GGUF")->required();
  cmd->add_option("--type", f->type, "f32, f16, bf16, q8_0, q4_0, q4_k or q6_k")->required();
  cmd->callback([f] {
    const auto type = dtype_from_name(f->type);
    if (!type) throw Error("--type: unknown type '" + f->type + "'");
    quantize_model(f->in, f->out, *type);
    std::fprintf(stderr, "wrote %s\n", f->out.c_str());
  });
}

}  // namespace strata::tools
