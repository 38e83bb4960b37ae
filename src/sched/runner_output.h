// What the model runner produced for one SchedulerOutput, entry by entry: the token it
// sampled, the logprobs asked for, and where the prompt logits asked for are. Plain data
// that Scheduler::update_from_output consumes; the spans point into the runner's buffers
// and are valid until its next step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "strata/types.h"

namespace strata {

struct PromptLogitRows {
  int32_t first_row = 0;  // row of `RunnerOutput::logits`
  int32_t n_rows = 0;
};

struct RunnerOutput {
  // The tokens the step produced, request by request: entry i's are
  // tokens[token_begin[i], token_begin[i + 1]). None where the step did not reach the
  // request's last token (a prefill chunk that is not the last); one for a plain decode
  // or the last prefill chunk; for a speculating request its accepted draft tokens, then
  // the target's own token.
  std::vector<int32_t> tokens;
  std::vector<int32_t> token_begin;  // [n_scheduled + 1]
  // logprobs[j] goes with tokens[j], filled where the request asked for logprobs (the
  // vector keeps entries past tokens.size() from earlier steps, for their capacity).
  std::vector<TokenLogprob> logprobs;
  // [n_scheduled] draft tokens the step verified for the request (0: not speculating).
  std::vector<int32_t> n_drafted;
  // [n_scheduled] rows of the request's prompt logits this step (n_rows 0: none).
  std::vector<PromptLogitRows> prompt_rows;
  std::span<const float> logits;  // [rows][n_vocab] as the forward pass returned them
  int64_t n_vocab = 0;
  double started_s = 0,
         finished_s = 0;  // steady-clock seconds around the forward pass and sampling

  size_t n_entries() const { return n_drafted.size(); }
  std::span<const int32_t> produced(size_t i) const {
    return std::span<const int32_t>(tokens).subspan(
        static_cast<size_t>(token_begin[i]),
        static_cast<size_t>(token_begin[i + 1] - token_begin[i]));
  }
  // Clears for `n` entries, keeping the vectors' capacity.
  void reset(size_t n) {
    tokens.clear();
    token_begin.assign(1, 0);
    n_drafted.assign(n, 0);
  }
  // Appends a token to the entry being filled (entries are filled in order); returns
  // its logprob slot.
  TokenLogprob& push(int32_t token) {
    tokens.push_back(token);
    if (logprobs.size() < tokens.size()) logprobs.emplace_back();
    TokenLogprob& lp = logprobs[tokens.size() - 1];
    lp.token = token;
    return lp;
  }
  void end_entry() { token_begin.push_back(static_cast<int32_t>(tokens.size())); }
};

}  // namespace strata
