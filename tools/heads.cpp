// strata heads score -m MODEL.gguf [--calib FILE] [--ctx N] [--samples N] -o MAP.json
// Scores every KV head by the damage done when it alone keeps only sinks and a window
// (eval/head_score.h) and writes a head map with the scores, which --retrieval-ratio
// then cuts at any ratio.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>

#include "eval/head_map.h"
#include "eval/head_score.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace strata::tools {
namespace {

struct HeadsScoreFlags {
  EngineFlags engine;
  std::string calib;
  int64_t samples = 4;
  uint64_t seed = 1;
  std::string out;
};

// -c/--ctx is the calibration length (default 1024); --sink/--window the streaming
// shape each head is tried with (default 4 and 64).
void heads_score(HeadsScoreFlags f) {
  if (f.engine.ctx <= 0) f.engine.ctx = 1024;
  const int64_t ctx = f.engine.ctx;
  const int32_t sink = f.engine.sparse.sink >= 0 ? f.engine.sparse.sink : 4;
  const int32_t window = f.engine.sparse.window >= 0 ? f.engine.sparse.window : 64;
  if (!f.engine.sparse.map_path.empty() || f.engine.sparse.retrieval_ratio >= 0) {
    throw Error(
        "heads score: --sparse-heads/--retrieval-ratio do not apply (it scores one head at a "
        "time)");
  }
  auto model = Model::load(f.engine.model_path, f.engine.load_options());
  ThreadPool pool(f.engine.thread_count());
  std::vector<CalibrationSample> samples;
  if (!f.calib.empty()) {
    std::ifstream in(f.calib);
    if (!in) throw Error("--calib: cannot read " + f.calib);
    std::stringstream ss;
    ss << in.rdbuf();
    const Tokenizer tok = Tokenizer::from_gguf(model->file());
    samples = text_calibration(tok.encode(ss.str(), tok.add_bos(), false), ctx, f.samples);
    if (samples.empty()) throw Error("--calib: the text has fewer tokens than --ctx");
  }
  // Synthetic long-range inputs always take part: text alone rarely needs the far past.
  for (auto& s : synthetic_calibration(*model, ctx, f.samples, f.seed))
    samples.push_back(std::move(s));

  HeadScoreOptions o;
  o.sink = sink;
  o.window = window;
  o.engine = f.engine.single_request_config(*model);
  const auto& c = model->config();
  std::fprintf(stderr, "scoring %lld KV heads on %zu samples of %lld tokens (sink %d, window %d)\n",
               static_cast<long long>(c.n_layers * c.n_kv_heads), samples.size(),
               static_cast<long long>(ctx), sink, window);
  const HeadScores scores = score_heads(*model, samples, o, pool, [](int64_t done, int64_t total) {
    std::fprintf(stderr, "\r  %lld/%lld heads", static_cast<long long>(done),
                 static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\n");
  });

  // Ranking, most important first.
  std::vector<int64_t> order(static_cast<size_t>(c.n_layers * c.n_kv_heads));
  std::iota(order.begin(), order.end(), 0);
  auto kl = [&](int64_t i) {
    return scores.kl[static_cast<size_t>(i / c.n_kv_heads)][static_cast<size_t>(i % c.n_kv_heads)];
  };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return kl(a) > kl(b); });
  std::printf(
      "| rank | layer | kv head | KL(dense || streaming) | argmax changed "
      "|\n|---:|---:|---:|---:|---:|\n");
  for (size_t r = 0; r < order.size(); ++r) {
    const int64_t i = order[r];
    std::printf("| %zu | %lld | %lld | %.6g | %.1f%% |\n", r + 1,
                static_cast<long long>(i / c.n_kv_heads), static_cast<long long>(i % c.n_kv_heads),
                kl(i),
                100.0 * scores.flipped[static_cast<size_t>(i / c.n_kv_heads)]
                                      [static_cast<size_t>(i % c.n_kv_heads)]);
  }
  if (!f.out.empty()) {
    HeadModes m;  // dense: the map records scores only, so --retrieval-ratio decides
    m.n_layers = c.n_layers;
    m.n_kv_heads = c.n_kv_heads;
    m.sink = sink;
    m.window = window;
    std::ofstream out(f.out);
    out << head_map_json(m, scores.kl);
    if (!out) throw Error("-o: cannot write " + f.out);
    std::fprintf(stderr, "wrote %s (cut it with --sparse-heads %s --retrieval-ratio R)\n",
                 f.out.c_str(), f.out.c_str());
  }
}

}  // namespace

void register_heads(CLI::App& app) {
  auto* heads = app.add_subcommand("heads", "sparse attention: score KV heads");
  heads->require_subcommand(1);
  auto f = std::make_shared<HeadsScoreFlags>();
  auto* cmd =
      heads->add_subcommand("score", "rank KV heads by the damage of making each one streaming");
  f->engine.add(*cmd);
  cmd->add_option("--calib", f->calib,
                  "calibration text file (synthetic passkey/needle inputs are always added)");
  cmd->add_option("--samples", f->samples, "synthetic inputs (and at most this many text windows)")
      ->capture_default_str();
  cmd->add_option("--seed", f->seed, "seed of the synthetic inputs")->capture_default_str();
  cmd->add_option("-o,--output", f->out, "write the head map (JSON with scores) here");
  cmd->callback([f] { heads_score(*f); });
  cmd->footer(
      "-c/--ctx sets the calibration length (default 1024), --sink/--window the streaming shape "
      "tried (default 4/64).");
}

}  // namespace strata::tools
