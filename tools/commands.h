// One registration function per subcommand; each lives in its own file in tools/.
#pragma once

#include <CLI/CLI.hpp>

namespace strata::tools {

void register_run(CLI::App& app);
void register_convert(CLI::App& app);
void register_info(CLI::App& app);
void register_logits(CLI::App& app);
void register_make_model(CLI::App& app);
void register_quantize(CLI::App& app);
void register_bench(CLI::App& app);
void register_bench_offline(CLI::App& bench);  // a subcommand of bench
void register_bench_serve(CLI::App& bench);    // a subcommand of bench (tools/bench_serve.cpp)
void register_batch(CLI::App& app);
void register_tokenize(CLI::App& app);  // tokenize and detokenize
void register_template(CLI::App& app);
void register_serve(CLI::App& app);          // tools/serve.cpp
void register_router(CLI::App& app);         // tools/router.cpp
void register_eval(CLI::App& app);           // eval needle (tools/eval_needle.cpp)
void register_eval_ppl_kld(CLI::App& eval);  // eval ppl, eval kld (tools/eval_ppl.cpp)
void register_heads(CLI::App& app);          // heads score (tools/heads.cpp)

inline void register_commands(CLI::App& app) {
  register_run(app);
  register_convert(app);
  register_info(app);
  register_logits(app);
  register_make_model(app);
  register_quantize(app);
  register_bench(app);
  register_batch(app);
#ifdef STRATA_HAS_SERVER
  register_serve(app);
  register_router(app);
#endif
  register_tokenize(app);
  register_template(app);
  register_eval(app);
  register_heads(app);
}

}  // namespace strata::tools
