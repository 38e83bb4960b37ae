// What the engine records per step when tracing is on (EngineCore::step calls this only
// with a tracer): the step span's arguments (batch composition) and the instant events
// of the scheduling decision (preemptions, prefix-cache hits, KV evictions).
#pragma once

#include <cstdint>

#include "sched/scheduler_output.h"
#include "trace/tracer.h"

namespace strata {

// `step` and `schedule` are the open spans of this step; both are cancelled when the
// scheduler found nothing to run. `prefix_hit_tokens` and `evicted_blocks` are the
// KvManager counters' growth during schedule().
void trace_schedule(Tracer& tracer, const SchedulerOutput& out, TraceSpan& step,
                    TraceSpan& schedule, int64_t prefix_hit_tokens, int64_t evicted_blocks);

}  // namespace strata
