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
  // [n_scheduled] the sampled token, or -1 where the step did not reach the request's
  // last token (a prefill chunk that is not the last).
  std::vector<int32_t> sampled;
  // [n_scheduled] filled where the request asked for logprobs and a token was sampled.
  std::vector<TokenLogprob> logprobs;
  // [n_scheduled] rows of the request's prompt logits this step (n_rows 0: none).
  std::vector<PromptLogitRows> prompt_rows;
  std::span<const float> logits;  // [rows][n_vocab] as the forward pass returned them
  int64_t n_vocab = 0;
  double started_s = 0,
         finished_s = 0;  // steady-clock seconds around the forward pass and sampling
};

}  // namespace strata
