#include "engine/engine_trace.h"

#include <cinttypes>
#include <cstdio>

namespace strata {

void trace_schedule(Tracer& tracer, const SchedulerOutput& out, TraceSpan& step,
                    TraceSpan& schedule, int64_t prefix_hit_tokens, int64_t evicted_blocks) {
  for (const RequestId id : out.preempted) {
    tracer.instant("preempt", kTraceScheduler, "request", static_cast<int64_t>(id));
  }
  if (prefix_hit_tokens > 0)
    tracer.instant("prefix_hit", kTraceScheduler, "n_cached_tokens", prefix_hit_tokens);
  if (evicted_blocks > 0) tracer.instant("kv_evict", kTraceScheduler, "n_blocks", evicted_blocks);
  if (out.empty()) {
    schedule.cancel();
    step.cancel();
    return;
  }
  step.arg("n_decode_tokens", out.n_decode_tokens)
      .arg("n_prefill_tokens", out.n_prefill_tokens)
      .arg("n_requests", static_cast<int64_t>(out.scheduled.size()));
  // "3,4,7": the scheduled request ids, decodes first; cut short with "..." when long.
  char ids[Tracer::kMaxText + 1];
  size_t len = 0;
  for (const auto& s : out.scheduled) {
    char one[24];
    const int n = std::snprintf(one, sizeof one, "%s%" PRIu64, len > 0 ? "," : "", s.request->id);
    if (len + static_cast<size_t>(n) + 3 > Tracer::kMaxText) {
      len += static_cast<size_t>(std::snprintf(ids + len, sizeof ids - len, "..."));
      break;
    }
    len += static_cast<size_t>(std::snprintf(ids + len, sizeof ids - len, "%s", one));
  }
  step.text_arg("requests", std::string_view(ids, len));
}

}  // namespace strata
