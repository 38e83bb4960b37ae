// One request, from submission to its last output: what it asked for, its tokens
// (prompt, then generated), how many of them are in the KV cache, its KV blocks, its
// sampler and its timings. The scheduler owns it; Scheduler::update_from_output is the
// one place its state changes after a step.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/constraint.h"
#include "kv/kv_manager.h"
#include "sample/sampler.h"
#include "strata/types.h"

namespace strata {

enum class RequestStatus { kWaiting, kRunning };

// A request's speculation so far: what the adaptive controller estimates acceptance from.
struct SpecStats {
  int64_t drafted = 0;   // draft tokens verified
  int64_t accepted = 0;  // of them accepted
  // Per-token acceptance, exponentially averaged: accepted tokens, and trials (accepted
  // tokens plus the rejection that ended a draft).
  double ema_accepted = 0.0, ema_trials = 0.0;
  int32_t steps_since_probe = 0;  // decode steps without a draft since the last one
};

struct Request {
  Request(RequestId id, std::vector<int32_t> prompt, const RequestOptions& options,
          int64_t n_vocab);

  RequestId id = 0;
  RequestOptions options;
  uint64_t arrival = 0;  // submission order
  int32_t n_prompt = 0;
  std::vector<int32_t> tokens;  // prompt followed by generated tokens
  int64_t n_computed = 0;       // tokens whose K/V are in the cache
  int32_t n_generated = 0;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache (first schedule)
  bool prefix_matched = false;  // prefix lookup done for the current admission
  int32_t n_preemptions = 0;
  RequestStatus status = RequestStatus::kWaiting;
  SequenceKv kv;
  Sampler sampler;
  std::unique_ptr<grammar::Constraint> constraint;  // options.grammar's state; null: none
  std::vector<float> prompt_logits;  // [rows so far][n_vocab] until the first output takes them
  // Speculative decoding. `spec_k`: draft tokens the next step makes room for (set before
  // scheduling; the scheduler may lower it). `draft`: the tokens proposed for this step,
  // verified after the pending token and cleared by update_from_output. `draft_probs`:
  // [draft.size()][n_vocab] the distributions they were drawn from, empty when the
  // proposer is deterministic (a point mass at each token).
  int32_t spec_k = 0;
  std::vector<int32_t> draft;
  std::vector<float> draft_probs;
  SpecStats spec;
  std::vector<TokenLogprob> prompt_logprobs;  // scored prompt tokens so far (prompt_logprobs >= 0)
  // Steady-clock seconds; -1 until it happens.
  double arrival_s = 0, first_scheduled_s = -1, first_token_s = -1;

  int32_t priority() const { return options.priority; }
  // Tokens whose K/V still have to be computed before the next token can be sampled.
  int64_t n_pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
  // Whether the request is decoding: one known token left to compute.
  bool decoding() const { return n_pending() == 1 && !prefilling(); }
  // The token at position p of what this step computes: known tokens, then the draft.
  int32_t token_at(int64_t p) const {
    const auto n = static_cast<int64_t>(tokens.size());
    return p < n ? tokens[static_cast<size_t>(p)] : draft[static_cast<size_t>(p - n)];
  }
  bool prefilling() const { return n_computed < n_prompt; }
  // First prompt position whose logits the request wants (n_prompt: none).
  int64_t prompt_logits_from() const {
    return options.prompt_logprobs >= 0 ? 0 : n_prompt - options.prompt_logits;
  }
  // Whether the request has produced an output token yet (prompt logits go with the first).
  bool started() const { return first_token_s >= 0; }
};

}  // namespace strata
