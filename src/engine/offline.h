// Offline generation on the engine loop: submit every prompt at once (in order, so FCFS
// follows the input), step until all finish, return results in input order.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "engine/output_processor.h"

namespace strata {

struct OfflineRequest {
  std::string id;
  std::vector<int32_t> prompt;
  RequestOptions options;
};

struct OfflineResult {
  std::string id;
  std::vector<int32_t> tokens;
  std::string text;
  FinishReason finish = FinishReason::kNone;
  int32_t n_prompt = 0, n_cached_prompt = 0;
  double ttft_ms = 0, e2e_ms = 0;
  std::vector<TokenLogprob> logprobs;  // one per token when the request asked for them
  std::vector<float> prompt_logits;    // RequestOptions::prompt_logits rows x n_vocab
};

// `tokenizer` may be null: then results carry no text and stop strings are ignored.
// `on_output`, when set, sees every engine output as it comes (streaming to a terminal).
std::vector<OfflineResult> generate(
    EngineCore& engine, const Tokenizer* tokenizer, const std::vector<OfflineRequest>& requests,
    const std::function<void(const RequestOutput&)>& on_output = {});

}  // namespace strata
