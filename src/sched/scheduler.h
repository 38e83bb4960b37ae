// Decides, each step, which requests run and how many tokens each computes, under a
// token budget and a sequence cap, with chunked prefill and preemption when the KV pool
// runs out. Two stages, as in TensorRT-LLM's batch manager: capacity (can this request's
// KV fit? preempt someone if a running request cannot grow) and the token budget
// (decodes first, then prefill chunks of at most prefill_chunk tokens).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "kv/kv_manager.h"
#include "sched/request.h"
#include "sched/scheduler_output.h"

namespace strata {

enum class SchedulePolicy { kFcfs, kPriority };

struct SchedulerConfig {
  int32_t max_seqs = 64;            // running sequences at most
  int64_t max_batch_tokens = 2048;  // tokens per step at most
  int64_t prefill_chunk = 512;      // prompt tokens per request per step at most (0 = no chunking)
  SchedulePolicy policy = SchedulePolicy::kFcfs;
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvManager& kv);

  // Takes ownership; the request waits until schedule() admits it.
  void add(std::unique_ptr<SchedRequest> request);
  // Frees the request's blocks and forgets it. Returns false if it is unknown.
  bool remove(RequestId id);
  SchedRequest* find(RequestId id);

  SchedulerOutput schedule();

  size_t n_running() const { return running_.size(); }
  size_t n_waiting() const { return waiting_.size(); }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int64_t n_preemptions() const { return n_preemptions_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  // True if `a` should run before `b` (policy order).
  bool runs_before(const SchedRequest& a, const SchedRequest& b) const;
  void insert_waiting(SchedRequest* r);
  // Picks the running request to evict: lowest priority, then latest arrival.
  SchedRequest* pick_victim() const;
  void preempt(SchedRequest* victim, SchedulerOutput& out);
  int64_t chunk_limit() const;

  SchedulerConfig config_;
  KvManager& kv_;
  std::vector<std::unique_ptr<SchedRequest>> owned_;
  std::vector<SchedRequest*> running_;
  std::deque<SchedRequest*> waiting_;
  int64_t n_preemptions_ = 0;
};

}  // namespace strata
