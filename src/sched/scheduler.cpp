#include "sched/scheduler.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"

namespace strata {

Scheduler::Scheduler(const SchedulerConfig& config, KvManager& kv) : config_(config), kv_(kv) {
  if (config.max_seqs <= 0) throw Error("scheduler: max_seqs must be positive");
  if (config.max_batch_tokens <= 0) throw Error("scheduler: max_batch_tokens must be positive");
  if (config.prefill_chunk < 0) throw Error("scheduler: prefill_chunk must be >= 0");
}

bool Scheduler::runs_before(const SchedRequest& a, const SchedRequest& b) const {
  if (config_.policy == SchedulePolicy::kPriority && a.priority != b.priority) {
    return a.priority < b.priority;
  }
  return a.arrival < b.arrival;
}

void Scheduler::insert_waiting(SchedRequest* r) {
  r->status = RequestStatus::kWaiting;
  auto pos = std::upper_bound(waiting_.begin(), waiting_.end(), r,
                              [&](const SchedRequest* a, const SchedRequest* b) { return runs_before(*a, *b); });
  waiting_.insert(pos, r);
}

void Scheduler::add(std::unique_ptr<SchedRequest> request) {
  if (request->tokens.empty()) throw Error("scheduler: request without tokens");
  SchedRequest* r = request.get();
  owned_.push_back(std::move(request));
  insert_waiting(r);
}

SchedRequest* Scheduler::find(RequestId id) {
  for (auto& r : owned_) {
    if (r->id == id) return r.get();
  }
  return nullptr;
}

bool Scheduler::remove(RequestId id) {
  const auto it = std::find_if(owned_.begin(), owned_.end(), [&](const auto& r) { return r->id == id; });
  if (it == owned_.end()) return false;
  SchedRequest* r = it->get();
  kv_.free(r->kv);
  running_.erase(std::remove(running_.begin(), running_.end(), r), running_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), r), waiting_.end());
  owned_.erase(it);
  return true;
}

SchedRequest* Scheduler::pick_victim() const {
  SchedRequest* victim = nullptr;
  for (SchedRequest* r : running_) {
    if (!victim || runs_before(*victim, *r)) victim = r;
  }
  return victim;
}

void Scheduler::preempt(SchedRequest* victim, SchedulerOutput& out) {
  // Recompute-style preemption: the victim drops its blocks (full ones stay in the
  // prefix cache, so its recompute is often cheap) and keeps its generated tokens.
  kv_.free(victim->kv);
  victim->n_computed = 0;
  victim->prefix_matched = false;
  ++victim->n_preemptions;
  ++n_preemptions_;
  running_.erase(std::remove(running_.begin(), running_.end(), victim), running_.end());
  insert_waiting(victim);
  out.preempted.push_back(victim->id);
}

int64_t Scheduler::chunk_limit() const {
  return config_.prefill_chunk > 0 ? config_.prefill_chunk : std::numeric_limits<int64_t>::max();
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  int64_t budget = config_.max_batch_tokens;

  // Stage 1: running requests, decodes first, then unfinished prefills, each in policy order.
  std::vector<SchedRequest*> order = running_;
  std::stable_sort(order.begin(), order.end(), [&](const SchedRequest* a, const SchedRequest* b) {
    const bool da = a->n_pending() == 1, db = b->n_pending() == 1;
    if (da != db) return da;
    return runs_before(*a, *b);
  });
  for (SchedRequest* r : order) {
    if (r->status != RequestStatus::kRunning || budget <= 0) continue;
    int64_t n = std::min(r->n_pending(), chunk_limit());
    if (n > budget) {
      // Chunked: take what fits. Unchunked: a prompt runs whole, so it waits for a step
      // with room, or runs alone over the budget when nothing else is scheduled.
      if (config_.prefill_chunk > 0) {
        n = budget;
      } else if (!out.scheduled.empty()) {
        continue;
      }
    }
    bool self_preempted = false;
    while (!kv_.allocate(r->kv, r->n_computed + n)) {
      SchedRequest* victim = pick_victim();
      preempt(victim, out);
      if (victim == r) {
        self_preempted = true;
        break;
      }
      // A victim scheduled earlier in this step gives its tokens back.
      const auto it = std::find_if(out.scheduled.begin(), out.scheduled.end(),
                                   [&](const ScheduledRequest& s) { return s.request == victim; });
      if (it != out.scheduled.end()) {
        budget += it->n_tokens;
        out.scheduled.erase(it);
      }
    }
    if (self_preempted) continue;
    out.scheduled.push_back({r, static_cast<int32_t>(n)});
    budget -= n;
  }

  // Stage 2: admit waiting requests while budget, sequence slots and KV allow. Nothing
  // is admitted in a step that had to preempt, so freed blocks are not immediately
  // taken by a newcomer while the preempted request waits.
  while (out.preempted.empty() && !waiting_.empty() && budget > 0 &&
         static_cast<int32_t>(running_.size()) < config_.max_seqs) {
    SchedRequest* r = waiting_.front();
    if (!r->prefix_matched) {
      r->n_computed = kv_.match_prefix(r->kv, r->tokens);
      if (r->n_preemptions == 0) r->n_cached_prompt = static_cast<int32_t>(r->n_computed);
      r->prefix_matched = true;
    }
    int64_t n = std::min(r->n_pending(), chunk_limit());
    if (n > budget) {
      if (config_.prefill_chunk > 0) {
        n = budget;
      } else if (!out.scheduled.empty()) {
        break;
      }
    }
    if (!kv_.allocate(r->kv, r->n_computed + n)) {
      // Does not fit now: give the matched blocks back so they stay evictable.
      kv_.free(r->kv);
      r->n_computed = 0;
      r->prefix_matched = false;
      break;
    }
    waiting_.pop_front();
    r->status = RequestStatus::kRunning;
    running_.push_back(r);
    out.scheduled.push_back({r, static_cast<int32_t>(n)});
    budget -= n;
  }
  for (const auto& s : out.scheduled) {
    (s.request->n_pending() == 1 ? out.n_decode_tokens : out.n_prefill_tokens) += s.n_tokens;
  }
  return out;
}

}  // namespace strata
