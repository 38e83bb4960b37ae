#include "runner/model_runner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/clock.h"
#include "core/error.h"
#include "sample/logprobs.h"

namespace strata {

ModelRunner::ModelRunner(Model& model, ThreadPool& pool, const KvCacheConfig& cache,
                         std::vector<int32_t> eog_tokens)
    : model_(model), pool_(pool), cache_(cache), eog_tokens_(std::move(eog_tokens)) {
  const auto n_vocab = static_cast<size_t>(model.config().n_vocab);
  row_.resize(n_vocab);
  masked_.resize(n_vocab);
  order_.resize(n_vocab);
  output_.n_vocab = model.config().n_vocab;
}

void ModelRunner::build_batch(const SchedulerOutput& plan) {
  tokens_.clear();
  positions_.clear();
  seq_index_.clear();
  logit_rows_.clear();
  views_.clear();
  sample_row_.clear();
  output_.prompt_rows.assign(plan.scheduled.size(), {});
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    const Request& r = *plan.scheduled[i].request;
    const int64_t start = r.n_computed;
    const int64_t end = start + plan.scheduled[i].n_tokens;
    if (end > static_cast<int64_t>(r.tokens.size()))
      throw Error("model runner: step runs past the request's tokens");
    // Prompt positions whose logits the request wants, while it has not started.
    const int64_t logits_from = r.started() ? end : std::max(start, r.prompt_logits_from());
    const int64_t logits_to = std::min<int64_t>(end, r.n_prompt);
    if (logits_from < logits_to) {
      output_.prompt_rows[i] = {static_cast<int32_t>(logit_rows_.size()),
                                static_cast<int32_t>(logits_to - logits_from)};
    }
    for (int64_t p = start; p < end; ++p) {
      tokens_.push_back(r.tokens[static_cast<size_t>(p)]);
      positions_.push_back(static_cast<int32_t>(p));
      seq_index_.push_back(static_cast<int32_t>(i));
      const bool prompt_row = p >= logits_from && p < logits_to;
      const bool last = p + 1 == static_cast<int64_t>(r.tokens.size());
      if (prompt_row || last) logit_rows_.push_back(static_cast<int32_t>(tokens_.size() - 1));
    }
    views_.push_back({r.kv.block_table(), static_cast<int32_t>(end), r.kv.stream_table()});
    // A token is sampled only when this step reaches the request's last known token.
    sample_row_.push_back(end == static_cast<int64_t>(r.tokens.size())
                              ? static_cast<int32_t>(logit_rows_.size()) - 1
                              : -1);
  }
}

const RunnerOutput& ModelRunner::execute(const SchedulerOutput& plan) {
  output_.started_s = steady_now_s();
  build_batch(plan);
  const auto logits = model_.forward(
      ForwardBatch{tokens_, positions_, seq_index_, views_, logit_rows_}, cache_, pool_);
  output_.logits = logits;
  sample(plan, logits);
  output_.finished_s = steady_now_s();
  return output_;
}

void ModelRunner::sample(const SchedulerOutput& plan, std::span<const float> logits) {
  TraceSpan span(model_.tracer(), "sample", kTraceScheduler);
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  output_.sampled.assign(plan.scheduled.size(), -1);
  output_.logprobs.resize(plan.scheduled.size());
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    if (sample_row_[i] < 0) continue;
    Request& r = *plan.scheduled[i].request;
    const auto src = logits.subspan(static_cast<size_t>(sample_row_[i]) * n_vocab, n_vocab);
    std::copy(src.begin(), src.end(), row_.begin());
    std::span<const float> dist = src;  // what logprobs are computed from
    if (r.constraint) {
      r.constraint->mask(row_);
      if (r.options.logprobs >= 0) {
        std::copy(row_.begin(), row_.end(), masked_.begin());
        dist = masked_;
      }
    }
    const StopConditions& stop = r.options.stop;
    if (r.n_generated < stop.min_tokens) {
      // Before min_tokens, no token may end the request.
      constexpr float kNever = -std::numeric_limits<float>::infinity();
      for (int32_t t : eog_tokens_) row_[static_cast<size_t>(t)] = kNever;
      for (int32_t t : stop.stop_token_ids) {
        if (t >= 0 && static_cast<size_t>(t) < n_vocab) row_[static_cast<size_t>(t)] = kNever;
      }
    }
    int32_t tok = r.sampler.sample(row_, r.tokens);
    // The sampler's rounding fallback may land on a masked token; never emit one.
    if (r.constraint && std::isinf(row_[static_cast<size_t>(tok)])) tok = argmax(row_);
    output_.sampled[i] = tok;
    if (r.options.logprobs >= 0) {
      output_.logprobs[i].token = tok;
      fill_logprobs(dist, r.options.logprobs, order_, output_.logprobs[i]);
    }
  }
}

}  // namespace strata
