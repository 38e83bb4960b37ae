#include "eval/head_score.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "engine/offline.h"
#include "eval/needle.h"

namespace strata {
namespace {

// log-softmax of one logits row into `out`.
void log_softmax(std::span<const float> logits, std::vector<double>& out) {
  out.resize(logits.size());
  const float mx = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - mx));
  const double log_z = static_cast<double>(mx) + std::log(sum);
  for (size_t i = 0; i < logits.size(); ++i) out[i] = static_cast<double>(logits[i]) - log_z;
}

// The scored rows' logits of every sample under `modes`, [n_scored][n_vocab] per
// sample: one engine, one request per sample asking for its prompt's last logits.
std::vector<std::vector<float>> scored_logits(Model& model,
                                              const std::vector<CalibrationSample>& samples,
                                              EngineConfig c, const HeadModes& modes,
                                              ThreadPool& pool) {
  c.head_modes = modes;
  c.prefix_cache = false;
  c.scheduler.max_seqs = 1;
  for (const auto& s : samples) {
    c.context_length =
        std::max<int64_t>(c.context_length, static_cast<int64_t>(s.tokens.size()) + 1);
  }
  EngineCore engine(model, pool, c);
  std::vector<std::vector<float>> out(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    RequestOptions o;
    o.stop.max_tokens = 0;
    o.prompt_logits = static_cast<int32_t>(samples[i].n_scored);
    out[i] = std::move(generate(engine, nullptr, {{"", samples[i].tokens, o}})[0].prompt_logits);
  }
  return out;
}

}  // namespace

std::vector<CalibrationSample> synthetic_calibration(const Model& model, int64_t ctx,
                                                     int64_t n_samples, uint64_t seed) {
  if (ctx < 16) throw Error("heads score: --ctx must be at least 16");
  std::vector<CalibrationSample> out;
  const bool constructed = model.file().has("strata.induction.retrieval_heads");
  if (constructed) {
    const NeedleTask task = needle_task_from_model(model);
    for (int64_t i = 0; i < n_samples; ++i) {
      const double depth =
          n_samples > 1 ? 0.05 + 0.9 * static_cast<double>(i) / static_cast<double>(n_samples - 1)
                        : 0.5;
      out.push_back(
          {make_needle_prompt(task, ctx, depth, seed + static_cast<uint64_t>(i)).tokens, 1});
    }
    return out;
  }
  // Passkey inputs: filler, a random segment at some depth, filler, the segment again.
  std::mt19937_64 rng(seed);
  const int64_t n_vocab = model.config().n_vocab;
  std::uniform_int_distribution<int32_t> tok(
      std::min<int32_t>(3, static_cast<int32_t>(n_vocab - 1)), static_cast<int32_t>(n_vocab - 1));
  const int64_t seg = std::min<int64_t>(32, ctx / 4);
  for (int64_t i = 0; i < n_samples; ++i) {
    std::vector<int32_t> t;
    const int64_t bos = model.file().get_int("tokenizer.ggml.bos_token_id", -1);
    if (bos >= 0 && bos < n_vocab) t.push_back(static_cast<int32_t>(bos));
    std::vector<int32_t> segment(static_cast<size_t>(seg));
    for (auto& x : segment) x = tok(rng);
    const double depth =
        n_samples > 1 ? 0.05 + 0.5 * static_cast<double>(i) / static_cast<double>(n_samples - 1)
                      : 0.25;
    const auto at = static_cast<int64_t>(depth * static_cast<double>(ctx - 2 * seg));
    while (static_cast<int64_t>(t.size()) < at) t.push_back(tok(rng));
    t.insert(t.end(), segment.begin(), segment.end());
    while (static_cast<int64_t>(t.size()) < ctx - seg) t.push_back(tok(rng));
    t.insert(t.end(), segment.begin(), segment.end());
    out.push_back({std::move(t), seg - 1});  // the first copied token is not predictable
  }
  return out;
}

std::vector<CalibrationSample> text_calibration(const std::vector<int32_t>& tokens, int64_t ctx,
                                                int64_t max_samples) {
  std::vector<CalibrationSample> out;
  for (size_t at = 0; at + static_cast<size_t>(ctx) <= tokens.size() &&
                      static_cast<int64_t>(out.size()) < max_samples;
       at += static_cast<size_t>(ctx)) {
    out.push_back({std::vector<int32_t>(tokens.begin() + static_cast<std::ptrdiff_t>(at),
                                        tokens.begin() + static_cast<std::ptrdiff_t>(at) + ctx),
                   std::max<int64_t>(1, ctx / 4)});
  }
  return out;
}

HeadScores score_heads(Model& model, const std::vector<CalibrationSample>& samples,
                       const HeadScoreOptions& options, ThreadPool& pool,
                       const std::function<void(int64_t, int64_t)>& progress) {
  if (samples.empty()) throw Error("heads score: no calibration samples");
  for (const auto& s : samples) {
    if (s.n_scored < 1 || s.n_scored > static_cast<int64_t>(s.tokens.size())) {
      throw Error("heads score: a sample scores more positions than it has");
    }
  }
  const int64_t n_layers = model.config().n_layers, n_kv = model.config().n_kv_heads;
  const auto n_vocab = static_cast<size_t>(model.config().n_vocab);
  // The dense reference, once: log-probabilities, probabilities and argmax per scored row.
  std::vector<std::vector<double>> ref_logp, ref_p;
  std::vector<size_t> ref_argmax;
  std::vector<double> row;
  const auto dense = scored_logits(model, samples, options.engine, {}, pool);
  for (size_t i = 0; i < samples.size(); ++i) {
    for (int64_t r = 0; r < samples[i].n_scored; ++r) {
      const std::span<const float> l(dense[i].data() + static_cast<size_t>(r) * n_vocab, n_vocab);
      log_softmax(l, row);
      ref_logp.push_back(row);
      for (double& x : row) x = std::exp(x);
      ref_p.push_back(row);
      ref_argmax.push_back(static_cast<size_t>(std::max_element(l.begin(), l.end()) - l.begin()));
    }
  }
  HeadScores out;
  out.kl.assign(static_cast<size_t>(n_layers), std::vector<double>(static_cast<size_t>(n_kv), 0.0));
  out.flipped = out.kl;
  HeadModes modes;
  modes.n_layers = n_layers;
  modes.n_kv_heads = n_kv;
  modes.sink = options.sink;
  modes.window = options.window;
  for (int64_t l = 0; l < n_layers; ++l) {
    for (int64_t h = 0; h < n_kv; ++h) {
      modes.streaming.assign(static_cast<size_t>(n_layers * n_kv), 0);
      modes.streaming[static_cast<size_t>(l * n_kv + h)] = 1;
      double kl = 0;
      int64_t flips = 0;
      size_t k = 0;
      const auto ablated = scored_logits(model, samples, options.engine, modes, pool);
      for (size_t si = 0; si < samples.size(); ++si) {
        for (int64_t r = 0; r < samples[si].n_scored; ++r, ++k) {
          const std::span<const float> lr(ablated[si].data() + static_cast<size_t>(r) * n_vocab,
                                          n_vocab);
          log_softmax(lr, row);
          double d = 0;
          for (size_t i = 0; i < n_vocab; ++i) d += ref_p[k][i] * (ref_logp[k][i] - row[i]);
          kl += std::max(0.0, d);
          flips += static_cast<size_t>(std::max_element(lr.begin(), lr.end()) - lr.begin()) !=
                   ref_argmax[k];
        }
      }
      out.kl[static_cast<size_t>(l)][static_cast<size_t>(h)] = kl / static_cast<double>(k);
      out.flipped[static_cast<size_t>(l)][static_cast<size_t>(h)] =
          static_cast<double>(flips) / static_cast<double>(k);
      if (progress) progress(l * n_kv + h + 1, n_layers * n_kv);
    }
  }
  return out;
}

}  // namespace strata
