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
    const auto n_known = static_cast<int64_t>(r.tokens.size());
    const auto n_draft = static_cast<int64_t>(r.draft.size());
    if (end > n_known + n_draft) throw Error("model runner: step runs past the request's tokens");
    if (n_draft > 0 && end != n_known + n_draft)
      throw Error("model runner: a draft must be verified whole, after the request's tokens");
    // Prompt positions whose logits the request wants, while it has not started.
    const int64_t logits_from = r.started() ? end : std::max(start, r.prompt_logits_from());
    const int64_t logits_to = std::min<int64_t>(end, r.n_prompt);
    if (logits_from < logits_to) {
      output_.prompt_rows[i] = {static_cast<int32_t>(logit_rows_.size()),
                                static_cast<int32_t>(logits_to - logits_from)};
    }
    int32_t first_sample_row = -1;
    for (int64_t p = start; p < end; ++p) {
      tokens_.push_back(r.token_at(p));
      positions_.push_back(static_cast<int32_t>(p));
      seq_index_.push_back(static_cast<int32_t>(i));
      const bool prompt_row = p >= logits_from && p < logits_to;
      // The last known token and every draft token predict a token to check or sample.
      const bool sample_row = p + 1 >= n_known;
      if (prompt_row || sample_row) logit_rows_.push_back(static_cast<int32_t>(tokens_.size() - 1));
      if (sample_row && first_sample_row < 0)
        first_sample_row = static_cast<int32_t>(logit_rows_.size()) - 1;
    }
    views_.push_back({r.kv.block_table(), static_cast<int32_t>(end), r.kv.stream_table()});
    // A token is sampled only when this step reaches the request's last known token.
    sample_row_.push_back(end >= n_known ? first_sample_row : -1);
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
  output_.reset(plan.scheduled.size());
  for (size_t i = 0; i < plan.scheduled.size(); ++i) {
    if (sample_row_[i] >= 0) {
      Request& r = *plan.scheduled[i].request;
      if (r.draft.empty()) {
        sample_plain(r, logits.subspan(static_cast<size_t>(sample_row_[i]) * n_vocab, n_vocab));
      } else {
        verify_draft(r, logits.subspan(static_cast<size_t>(sample_row_[i]) * n_vocab,
                                       (r.draft.size() + 1) * n_vocab));
        output_.n_drafted[i] = static_cast<int32_t>(r.draft.size());
      }
    }
    output_.end_entry();
  }
}

// Copies a logits row into row_ with the request's EOG mask while min_tokens is not
// reached (`n_generated`: tokens the request will have generated before this one).
void ModelRunner::load_row(const Request& r, std::span<const float> src, int32_t n_generated) {
  std::copy(src.begin(), src.end(), row_.begin());
  const StopConditions& stop = r.options.stop;
  if (n_generated < stop.min_tokens) {
    // Before min_tokens, no token may end the request.
    constexpr float kNever = -std::numeric_limits<float>::infinity();
    const auto n_vocab = row_.size();
    for (int32_t t : eog_tokens_) row_[static_cast<size_t>(t)] = kNever;
    for (int32_t t : stop.stop_token_ids) {
      if (t >= 0 && static_cast<size_t>(t) < n_vocab) row_[static_cast<size_t>(t)] = kNever;
    }
  }
}

void ModelRunner::sample_plain(Request& r, std::span<const float> src) {
  load_row(r, src, r.n_generated);
  std::span<const float> dist = src;  // what logprobs are computed from
  if (r.constraint) {
    r.constraint->mask(row_);
    if (r.options.logprobs >= 0) {
      std::copy(row_.begin(), row_.end(), masked_.begin());
      dist = masked_;
    }
  }
  int32_t tok = r.sampler.sample(row_, r.tokens);
  // The sampler's rounding fallback may land on a masked token; never emit one.
  if (r.constraint && std::isinf(row_[static_cast<size_t>(tok)])) tok = argmax(row_);
  TokenLogprob& lp = output_.push(tok);
  if (r.options.logprobs >= 0) fill_logprobs(dist, r.options.logprobs, order_, lp);
}

// Speculative verification over rows [0, k]: row j is the target's distribution after
// the pending token and draft[0, j). A draft token is kept while the target accepts it
// (greedy: it is the argmax; sampling: with probability min(1, p/q)); the first
// rejection draws from the residual max(0, p - q), and a fully accepted draft earns the
// target's own token from the last row. The accepted tokens then follow the target's
// distribution exactly.
void ModelRunner::verify_draft(Request& r, std::span<const float> rows) {
  const auto n_vocab = row_.size();
  const size_t k = r.draft.size();
  const bool has_q = !r.draft_probs.empty();
  if (has_q && r.draft_probs.size() != k * n_vocab)
    throw Error("model runner: draft distributions do not match the draft");
  // The controller never drafts for a constrained request (the mask would need the
  // grammar state after each draft token).
  if (r.constraint) throw Error("model runner: a draft for a grammar-constrained request");
  history_.assign(r.tokens.begin(), r.tokens.end());
  for (size_t j = 0; j <= k; ++j) {
    const auto src = rows.subspan(j * n_vocab, n_vocab);
    load_row(r, src, r.n_generated + static_cast<int32_t>(j));
    r.sampler.prepare(row_, history_);
    int32_t tok = -1;
    bool go_on = false;
    if (j < k) {
      const int32_t d = r.draft[j];
      const std::span<const float> q =
          has_q ? std::span<const float>(r.draft_probs).subspan(j * n_vocab, n_vocab)
                : std::span<const float>();
      const double q_d = has_q ? q[static_cast<size_t>(d)] : 1.0;
      if (r.sampler.accept(d, q_d)) {
        tok = d;
        go_on = true;
      } else {
        tok = r.sampler.sample_residual(q, d);
      }
    } else {
      tok = r.sampler.sample_prepared();
    }
    TokenLogprob& lp = output_.push(tok);
    if (r.options.logprobs >= 0) fill_logprobs(src, r.options.logprobs, order_, lp);
    if (!go_on) return;
    history_.push_back(tok);
  }
}

}  // namespace strata
