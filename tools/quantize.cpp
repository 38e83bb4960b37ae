// strata quantize IN.gguf OUT.gguf --type TYPE (q8_0, q4_0, q5_k_m, iq4_xs, ...)
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
  cmd->add_option("--type", f->type,
                  "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q2_k, q3_k, q4_k, q5_k, "
                  "q6_k, iq4_xs, or the mixes q3_k_m, q4_k_m, q5_k_m")
      ->required();
  cmd->callback([f] {
    const auto scheme = parse_quant_scheme(f->type);
    if (!scheme) throw Error("--type: unknown type '" + f->type + "'");
    quantize_model(f->in, f->out, *scheme);
    std::fprintf(stderr, "wrote %s\n", f->out.c_str());
  });
}

}  // namespace strata::tools
