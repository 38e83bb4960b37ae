// strata eval needle -m MODEL.gguf [--ctx 1000,8000,32000] [--depths 0.05,0.5,0.95]
//                    [--trials N] [--seed S] [-o md|json] [engine flags, including
//                    --sparse-heads MAP.json --retrieval-ratio R --sink S --window W]
// Needle-in-a-haystack accuracy of a model with a known answer (make-model --preset
// induction): "K V" at each depth inside filler, the prompt ends with K, a trial is
// correct when the greedy next token is V. Prints a ctx x depth table and the overall
// accuracy; one progress line per cell goes to stderr.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/head_map.h"
#include "eval/needle.h"
#include "model/model.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {
namespace {

struct NeedleFlags {
  EngineFlags engine;
  std::vector<int64_t> ctxs = {1000, 8000, 32000};
  std::vector<double> depths = {0.05, 0.5, 0.95};
  int64_t trials = 5;
  uint64_t seed = 0;
  std::string format = "md";
};

std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * x);
  return buf;
}

void eval_needle(const NeedleFlags& f) {
  if (f.ctxs.empty() || f.depths.empty()) throw Error("--ctx and --depths need at least one value");
  if (f.trials <= 0) throw Error("--trials must be positive");
  if (f.format != "md" && f.format != "json") throw Error("-o: expected md or json");
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  const NeedleTask task = needle_task_from_model(*model);
  for (int64_t c : f.ctxs) {
    if (c > model->config().context_length) {
      throw Error("--ctx " + std::to_string(c) + " exceeds the model's context length " +
                  std::to_string(model->config().context_length));
    }
  }
  for (double d : f.depths) {
    if (!(d >= 0.0 && d <= 1.0))
      throw Error("--depths: " + std::to_string(d) + " is outside [0, 1]");
  }
  ThreadPool pool(f.engine.thread_count());
  // The head map is resolved once here, so a bad map fails before the first trial and
  // the report can say which heads streamed. The context is raised to each --ctx value.
  const EngineConfig ro = f.engine.single_request_config(*model);
  const std::string attention =
      ro.head_modes.dense() ? std::string("dense") : "sparse (" + ro.head_modes.describe() + ")";

  std::vector<NeedleResult> cells;
  int64_t total = 0, correct = 0;
  double seconds = 0.0;
  for (int64_t c : f.ctxs) {
    for (double d : f.depths) {
      const NeedleResult r = needle_accuracy(*model, ro, c, d, f.trials, f.seed, pool);
      std::fprintf(stderr, "ctx %lld depth %.2f: %lld/%lld correct (%lld answered K), %.1f s\n",
                   static_cast<long long>(c), d, static_cast<long long>(r.correct),
                   static_cast<long long>(r.trials), static_cast<long long>(r.answered_key),
                   r.seconds);
      cells.push_back(r);
      total += r.trials;
      correct += r.correct;
      seconds += r.seconds;
    }
  }
  const double overall =
      total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;

  if (f.format == "json") {
    nlohmann::json j;
    j["model"] = f.engine.model_path;
    j["trials"] = f.trials;
    j["seed"] = f.seed;
    j["chance"] = task.chance();
    j["retrieval_heads"] = task.retrieval_heads;
    j["attention"] = attention;
    j["cells"] = nlohmann::json::array();
    for (const auto& r : cells) {
      j["cells"].push_back({{"ctx", r.ctx},
                            {"depth", r.depth},
                            {"trials", r.trials},
                            {"correct", r.correct},
                            {"answered_key", r.answered_key},
                            {"accuracy", r.accuracy()},
                            {"seconds", r.seconds}});
    }
    j["overall"] = {
        {"trials", total}, {"correct", correct}, {"accuracy", overall}, {"seconds", seconds}};
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("needle retrieval: %s, %s attention, %lld trials per cell, seed %llu, chance %s\n\n",
              f.engine.model_path.c_str(), attention.c_str(), static_cast<long long>(f.trials),
              static_cast<unsigned long long>(f.seed), percent(task.chance()).c_str());
  std::printf("| ctx \\ depth |");
  for (double d : f.depths) std::printf(" %.2f |", d);
  std::printf(" all |\n|---:|");
  for (size_t i = 0; i <= f.depths.size(); ++i) std::printf("---:|");
  std::printf("\n");
  size_t k = 0;
  for (int64_t c : f.ctxs) {
    std::printf("| %lld |", static_cast<long long>(c));
    int64_t row_total = 0, row_correct = 0;
    for (size_t i = 0; i < f.depths.size(); ++i, ++k) {
      std::printf(" %s |", percent(cells[k].accuracy()).c_str());
      row_total += cells[k].trials;
      row_correct += cells[k].correct;
    }
    std::printf(" %s |\n",
                percent(static_cast<double>(row_correct) / static_cast<double>(row_total)).c_str());
  }
  std::printf("\noverall: %s (%lld/%lld), %.1f s\n", percent(overall).c_str(),
              static_cast<long long>(correct), static_cast<long long>(total), seconds);
}

}  // namespace

void register_eval(CLI::App& app) {
  auto* eval = app.add_subcommand("eval", "accuracy evaluations");
  eval->require_subcommand(1);
  auto f = std::make_shared<NeedleFlags>();
  auto* cmd =
      eval->add_subcommand("needle", "needle-in-a-haystack retrieval accuracy (induction model)");
  f->engine.add(*cmd);
  // --ctx here is the list of prompt lengths; the runner's context follows it.
  cmd->remove_option(cmd->get_option("--ctx"));
  cmd->add_option("--ctx", f->ctxs, "prompt lengths in tokens, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--depths", f->depths, "needle depths in [0, 1], comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--trials", f->trials, "prompts per (ctx, depth)")->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the needle and filler draws")->capture_default_str();
  cmd->add_option("-o,--output", f->format, "md (table) or json")->capture_default_str();
  cmd->callback([f] { eval_needle(*f); });
  register_eval_ppl_kld(*eval);  // tools/eval_ppl.cpp
}

}  // namespace strata::tools
