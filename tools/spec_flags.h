// Flags of speculative decoding (run, batch, serve and bench offline share them).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "core/error.h"
#include "engine/engine_core.h"
#include "model/model.h"

namespace strata::tools {

struct SpecFlags {
  std::string method = "none";
  int32_t k = 4;
  std::string draft_model;
  int32_t draft_layers = 0;
  std::string adaptive = "on";
  int32_t ngram_min = 1, ngram_max = 4;

  void add(CLI::App& cmd) {
    cmd.add_option("--spec", method,
                   "speculative decoding: none, ngram (prompt lookup), draft (--draft-model) or "
                   "early-exit (the first --draft-layers layers draft)")
        ->capture_default_str()
        ->check(CLI::IsMember({"none", "ngram", "draft", "early-exit"}));
    cmd.add_option("--spec-k", k, "draft tokens per step at most")
        ->capture_default_str()
        ->check(CLI::Range(1, 32));
    cmd.add_option("--draft-model", draft_model,
                   "draft GGUF for --spec draft (the same vocabulary as the model)");
    cmd.add_option("--draft-layers", draft_layers,
                   "--spec early-exit: layers of the model the draft runs (0: a quarter)")
        ->check(CLI::Range(0, 1 << 16));
    cmd.add_option("--spec-adaptive", adaptive,
                   "choose the draft length (0 included) per step from measured acceptance and "
                   "costs: on or off (off: always --spec-k)")
        ->capture_default_str()
        ->check(CLI::IsMember({"on", "off"}));
    cmd.add_option("--spec-ngram-min", ngram_min, "--spec ngram: shortest suffix matched")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
    cmd.add_option("--spec-ngram-max", ngram_max, "--spec ngram: longest suffix matched")
        ->capture_default_str()
        ->check(CLI::Range(1, 64));
  }

  SpecConfig config() const {
    const auto m = parse_spec_method(method);
    if (!m) throw Error("--spec: expected none, ngram, draft or early-exit");
    SpecConfig c;
    c.method = *m;
    c.k = k;
    c.draft_layers = draft_layers;
    c.adaptive = adaptive == "on";
    c.ngram_min = ngram_min;
    c.ngram_max = ngram_max;
    if (c.method == SpecMethod::kDraftModel && draft_model.empty())
      throw Error("--spec draft: needs --draft-model");
    if (c.method != SpecMethod::kDraftModel && !draft_model.empty())
      throw Error("--draft-model: only with --spec draft");
    return c;
  }

  // Sets config.spec, loading the draft model into `draft` (which must outlive the
  // engine) when one is asked for.
  void apply(EngineConfig& config, const Model::LoadOptions& load,
             std::unique_ptr<Model>& draft) const {
    config.spec = this->config();
    if (config.spec.method == SpecMethod::kDraftModel) {
      draft = Model::load(draft_model, load);
      config.draft_model = draft.get();
    }
  }
};

}  // namespace strata::tools
