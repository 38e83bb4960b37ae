// Head scoring for sparse attention: how much each KV head needs the whole context.
// For every (layer, KV head), that head alone is made streaming (sink S, window W) and
// the model's next-token distributions on long calibration inputs are compared with
// the dense model's, as the KL divergence KL(dense || ablated) averaged over the scored
// positions. Retrieval heads (the ones that look far back) score high; local heads,
// whose attention already lives in the sinks and the window, score about zero. The
// scores go into a head map (eval/head_map.h) that --retrieval-ratio cuts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "engine/engine_core.h"
#include "model/model.h"

namespace strata {

// One calibration input: the model reads `tokens`; the last `n_scored` positions'
// next-token distributions are compared.
struct CalibrationSample {
  std::vector<int32_t> tokens;
  int64_t n_scored = 1;
};

// Synthetic long inputs built from the model's own vocabulary, whose continuation can
// only be predicted by looking far back: needle prompts ("K V" deep in filler, ending
// with K) when the model carries the constructed-model metadata, otherwise passkey
// inputs — a random segment early in random filler, repeated at the end, scored on
// the repetition.
std::vector<CalibrationSample> synthetic_calibration(const Model& model, int64_t ctx,
                                                     int64_t n_samples, uint64_t seed);

// Token windows of `ctx` tokens from calibration text (already tokenized), scored on
// their last quarter.
std::vector<CalibrationSample> text_calibration(const std::vector<int32_t>& tokens, int64_t ctx,
                                                int64_t max_samples);

struct HeadScoreOptions {
  int32_t sink = 4;
  int32_t window = 64;
  EngineConfig engine;  // kv type, prefill chunk; head modes and context are set per run
};

struct HeadScores {
  std::vector<std::vector<double>> kl;  // [layer][kv_head]: mean KL(dense || head streaming)
  std::vector<std::vector<double>>
      flipped;  // [layer][kv_head]: fraction of scored argmaxes changed
};

// `progress(done, total)` is called after each head (may be empty).
HeadScores score_heads(Model& model, const std::vector<CalibrationSample>& samples,
                       const HeadScoreOptions& options, ThreadPool& pool,
                       const std::function<void(int64_t, int64_t)>& progress);

}  // namespace strata
