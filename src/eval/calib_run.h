// Model runs over a calibration text for `strata quantize --calib` (issue 21, part 3):
// the text cut into windows as `strata eval ppl` cuts it (eval/logit_stats.h PplPlan),
// the log-probs of every window's scored rows, optionally with a MatmulObserver
// installed (activation statistics), and the per-tensor sensitivity probe: the mean
// KL divergence of those log-probs from the source model's when only one tensor is
// quantized to one type.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "convert/quantize.h"
#include "eval/logit_stats.h"
#include "model/model.h"

namespace strata {

struct CalibWindows {
  PplPlan plan;
  std::vector<std::vector<int32_t>> windows;  // plan.n_chunks windows of plan.n_ctx tokens
};

// Reads `path` (Error when missing or empty) and cuts its tokens (the model's tokenizer,
// BOS in place of each window's first token when the model adds one) into windows of
// n_ctx tokens (at most the model's context); Error when not even one window fits.
CalibWindows calib_windows(const Model& model, const std::string& path, int64_t n_ctx);

// Log-probs of the scored rows of each window, windows x scored_per_chunk x n_vocab,
// run with `threads` threads and an f32 KV cache. `observer` (may be null) is installed
// on the model for the run and removed after.
std::vector<float> run_windows(Model& model, const CalibWindows& w, int threads,
                               MatmulObserver* observer = nullptr);

// Mean over rows of KL(ref || logp), both rows x n_vocab log-probs.
double mean_kld(const std::vector<float>& ref, const std::vector<float>& logp, int64_t n_vocab);

// sensitivity[tensor][type]: the mean KLD on `w` of the model `src` with only that tensor
// quantized to that type (others at source precision), quantized with `base`'s importance,
// search and outlier settings. `model` is `src` loaded (it is returned as it was given);
// `ref` is run_windows of it. A tensor the model binds as one matrix (Model::mutable_matrix)
// is rebound in `model` for its probes; any other is probed on a model rebuilt from a
// quantized copy of `src`. `progress` (may be empty) is called after each probe.
using Sensitivity = std::map<std::string, std::map<DType, double>>;
Sensitivity measure_sensitivity(
    Model& model, const gguf::GgufFile& src,
    const std::map<std::string, std::vector<DType>>& candidates, const QuantizeOptions& base,
    const CalibWindows& w, const std::vector<float>& ref, int threads,
    const std::function<void(const std::string&, DType, double)>& progress = {});

}  // namespace strata
