// What the scheduler decided for one step: plain data, no phase flags. Each entry says
// how many of a request's pending tokens run this step; whether that is a prefill chunk
// or a decode token follows from the counts.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/request.h"

namespace strata {

struct ScheduledRequest {
  Request* request = nullptr;
  int32_t n_tokens = 0;  // tokens computed this step, starting at request->n_computed
};

struct SchedulerOutput {
  std::vector<ScheduledRequest> scheduled;  // decodes first, then prefill chunks
  std::vector<RequestId> preempted;         // released their blocks this step
  int64_t n_decode_tokens = 0;
  int64_t n_prefill_tokens = 0;

  bool empty() const { return scheduled.empty(); }
  int64_t n_tokens() const { return n_decode_tokens + n_prefill_tokens; }
};

}  // namespace strata
