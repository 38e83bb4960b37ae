// strata's public value types: what a request asks for and what the engine reports.
// Plain data with no dependency on the engine's internals; the engine's own code uses
// these same types, so an embedding program and the server see identical fields.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

using RequestId = uint64_t;

namespace grammar {
class CompiledGrammar;  // src/grammar/compiled.h
}

// Per-request sampling settings, with the defaults an OpenAI-API user expects.
struct SamplingParams {
  float temperature = 1.0f;  // 0 = greedy (argmax)
  int32_t top_k = 0;         // 0 = off
  float top_p = 1.0f;        // 1 = off
  float min_p = 0.0f;        // 0 = off
  float repetition_penalty =
      1.0f;                       // 1 = off (CTRL-style: divide positive logits, multiply negative)
  float presence_penalty = 0.0f;  // subtracted once from every token already generated
  float frequency_penalty = 0.0f;  // subtracted per occurrence
  int32_t penalty_last_n = 64;     // window of recent tokens the penalties look at (-1 = all)
  uint64_t seed = 0;               // makes sampling reproducible per request

  bool greedy() const { return temperature <= 0.0f; }
};

// kError: the engine failed while running the request's batch (RequestOutput::error says
// why); the engine itself goes on serving.
enum class FinishReason { kNone, kStop, kLength, kAbort, kError };
std::string_view finish_reason_name(FinishReason reason);

struct StopConditions {
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;                 // end-of-generation tokens are suppressed before this
  std::vector<int32_t> stop_token_ids;    // in addition to the model's end-of-generation ids
  std::vector<std::string> stop_strings;  // checked on text by the OutputProcessor
  bool ignore_eos = false;
};

struct RequestOptions {
  SamplingParams sampling;
  StopConditions stop;
  int32_t priority = 0;  // lower runs first under the priority policy
  std::string cache_salt;
  int32_t logprobs = -1;  // -1: none; k >= 0: the chosen token's logprob and the top k
  // The raw logits of the last `prompt_logits` prompt positions (0: none), delivered with
  // the request's first output. Prefix-cache hits stop before those positions.
  int32_t prompt_logits = 0;
  // Lets the engine speculate for this request when it runs with a proposer (`--spec`);
  // false keeps it to one token per step. Either way the output follows the same
  // distribution (greedy: the same tokens).
  bool speculative = true;
  // -1: none; k >= 0: every prompt token's logprob (the first has none) and the top k,
  // from the prefill's logits. Such a request computes its whole prompt: the prefix cache
  // is bypassed, as for prompt_logits.
  int32_t prompt_logprobs = -1;
  // Constrained decoding: only tokens this grammar accepts are sampled, end-of-generation
  // only once its sentence is complete; logprobs are those of the masked distribution.
  // Shared by the sequences of a request; null: unconstrained.
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // (token, logprob), most likely first
};

struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> new_tokens;     // tokens generated this step (excludes stop tokens)
  std::vector<TokenLogprob> logprobs;  // one per new token when asked
  std::vector<float> prompt_logits;  // [RequestOptions::prompt_logits][n_vocab], first output only
  std::vector<TokenLogprob> prompt_logprobs;  // [n_prompt - 1] prompt tokens 1.., first output only
  FinishReason finish = FinishReason::kNone;
  std::string error;  // finish == kError: what failed
  int32_t n_prompt = 0;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache
  int32_t n_generated = 0;      // total so far
  // Timings in seconds, set when the request finishes.
  double queue_s = 0, ttft_s = 0, e2e_s = 0;
  bool finished() const { return finish != FinishReason::kNone; }
};

struct KvUsage {
  int32_t n_blocks = 0;
  int32_t used = 0;    // held by at least one sequence
  int32_t cached = 0;  // free to reuse but still holding a cached prefix
  int32_t free = 0;    // empty
  double usage_ratio() const { return n_blocks ? static_cast<double>(used) / n_blocks : 0.0; }
};

struct EngineMetrics {
  int64_t running = 0, waiting = 0;
  KvUsage kv;
  int64_t prefix_queries_tokens = 0, prefix_hits_tokens = 0;
  int64_t preemptions = 0;
  int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  int64_t steps = 0;
  int64_t step_failures = 0;  // forward passes that threw; their requests ended kError
  int64_t kv_evictions = 0;
  KvUsage kv_stream;              // the streaming heads' pool (sparse attention)
  uint64_t kv_bytes_in_use = 0;   // K/V bytes in blocks held by sequences, both pools
  int64_t kv_context_tokens = 0;  // tokens in the KV of live sequences
  // Speculative decoding: draft tokens verified and accepted, and decode entries that
  // speculated (each verified >= 1 draft token) or ran plain.
  int64_t spec_drafted_tokens = 0, spec_accepted_tokens = 0;
  int64_t spec_decode_steps = 0, plain_decode_steps = 0;
  // Mixture-of-experts models: max / mean of the tokens routed to each expert since start,
  // in the most uneven layer (1 = even; 0 = dense model or no token yet).
  double moe_expert_load_imbalance = 0.0;
};

}  // namespace strata
