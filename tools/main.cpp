// strata command-line entry point: dispatches to one subcommand per file in tools/.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "kernels/quant/traits.h"
#include "tools/commands.h"
#include "tools/isa_env.h"

int main(int argc, char** argv) {
  strata::kernels::init_cpu_kernels(strata::tools::isa_overrides_from_env());
  CLI::App app{"strata: LLM inference and serving engine"};
  app.require_subcommand(1);
  strata::tools::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
