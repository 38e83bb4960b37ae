// Per-request sampling settings, with the defaults an OpenAI-API user expects.
#pragma once

#include <cstdint>

namespace strata {

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy (argmax)
  int32_t top_k = 0;                // 0 = off
  float top_p = 1.0f;               // 1 = off
  float min_p = 0.0f;               // 0 = off
  float repetition_penalty = 1.0f;  // 1 = off (CTRL-style: divide positive logits, multiply negative)
  float presence_penalty = 0.0f;    // subtracted once from every token already generated
  float frequency_penalty = 0.0f;   // subtracted per occurrence
  int32_t penalty_last_n = 64;      // window of recent tokens the penalties look at (-1 = all)
  uint64_t seed = 0;                // makes sampling reproducible per request

  bool greedy() const { return temperature <= 0.0f; }
};

}  // namespace strata
