// A request's state as the scheduler and engine see it: its tokens (prompt, then
// generated), how many of them are in the KV cache, and its KV blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_manager.h"

namespace strata {

using RequestId = uint64_t;

enum class RequestStatus { kWaiting, kRunning, kFinished };

struct SchedRequest {
  RequestId id = 0;
  int32_t priority = 0;     // lower runs first under the priority policy
  uint64_t arrival = 0;     // submission order
  int32_t n_prompt = 0;
  std::vector<int32_t> tokens;  // prompt followed by generated tokens
  int64_t n_computed = 0;       // tokens whose K/V are in the cache
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache (first schedule)
  bool prefix_matched = false;  // prefix lookup done for the current admission
  int32_t n_preemptions = 0;
  RequestStatus status = RequestStatus::kWaiting;
  SequenceKv kv;

  // Tokens whose K/V still have to be computed before the next token can be sampled.
  int64_t n_pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
  bool prefilling() const { return n_computed < n_prompt; }
};

}  // namespace strata
