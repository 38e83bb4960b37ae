// Offline generation on the engine loop: submit every prompt at once (in order, so FCFS
// follows the input), step until all finish, return results in input order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/output_processor.h"
#include "strata/engine.h"

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
};

// `tokenizer` may be null: then results carry no text and stop strings are ignored.
std::vector<OfflineResult> generate(Engine& engine, const Tokenizer* tokenizer,
                                    const std::vector<OfflineRequest>& requests);

}  // namespace strata
