// Owns the live requests and decides, each step, which of them run and how many tokens
// each computes, under a token budget and a sequence cap, with chunked prefill and
// preemption when the KV pool runs out. schedule() has two stages, as TensorRT-LLM's
// batch manager does: capacity (can this request's KV grow? preempt someone if not) for
// the running requests, then admission of waiting ones within the token budget. After
// the model ran, update_from_output() advances every scheduled request: the one place a
// request's state changes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_manager.h"
#include "sched/request.h"
#include "sched/runner_output.h"
#include "sched/scheduler_output.h"

namespace strata {

enum class SchedulePolicy { kFcfs, kPriority };

struct SchedulerConfig {
  int32_t max_seqs = 64;            // running sequences at most
  int64_t max_batch_tokens = 2048;  // tokens per step at most
  int64_t prefill_chunk = 512;      // prompt tokens per request per step at most (0 = no chunking)
  SchedulePolicy policy = SchedulePolicy::kFcfs;
  int64_t max_model_len =
      0;  // KV positions a request may use; it stops (length) beyond; 0 = no limit
  std::vector<int32_t> eog_tokens = {};  // the model's end-of-generation ids
};

// The outputs of one step, reused from step to step (their vectors keep their capacity).
class StepOutputs {
 public:
  RequestOutput& add(RequestId id);
  RequestOutput& last() { return outputs_[n_ - 1]; }  // the one add() returned last
  void clear() { n_ = 0; }
  std::span<const RequestOutput> view() const { return {outputs_.data(), n_}; }

 private:
  std::vector<RequestOutput> outputs_;
  size_t n_ = 0;
};

struct SchedulerStats {
  int64_t prompt_tokens = 0;      // prompt tokens computed (prefix-cache hits excluded)
  int64_t generation_tokens = 0;  // tokens generated
  int64_t preemptions = 0;
  int64_t spec_drafted = 0, spec_accepted = 0;  // draft tokens verified, and kept
  int64_t spec_steps = 0, plain_steps = 0;      // decode entries with a draft, and without
};

class Scheduler {
 public:
  Scheduler(const SchedulerConfig& config, KvManager& kv);

  // Takes ownership; the request waits until schedule() admits it.
  void add(std::unique_ptr<Request> request);
  Request* find(RequestId id);

  SchedulerOutput schedule();

  // Applies a step's results: computed tokens advance and their full blocks are committed
  // to the prefix cache; each sampled token is appended, or ends its request by a stop
  // token or a length limit (which frees its blocks); one output per request that
  // produced a token or finished goes to `outputs`.
  void update_from_output(const SchedulerOutput& plan, const RunnerOutput& result,
                          StepOutputs& outputs);

  // Ends a request at once (its blocks are freed) with a final output of `reason`.
  // False if it is unknown.
  bool finish(RequestId id, FinishReason reason, StepOutputs& outputs, double now_s);
  // Frees the request's blocks and forgets it, without an output. False if unknown.
  bool remove(RequestId id);

  size_t n_running() const { return running_.size(); }
  std::span<Request* const> running() const { return running_; }
  size_t n_waiting() const { return waiting_.size(); }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  int64_t n_preemptions() const { return stats_.preemptions; }
  const SchedulerStats& stats() const { return stats_; }
  // Tokens in the KV of live requests.
  int64_t kv_context_tokens() const;
  const SchedulerConfig& config() const { return config_; }

 private:
  // True if `a` should run before `b` (policy order).
  bool runs_before(const Request& a, const Request& b) const;
  void insert_waiting(Request* r);
  // Picks the running request to evict: lowest priority, then latest arrival.
  Request* pick_victim() const;
  void preempt(Request* victim, SchedulerOutput& out);
  int64_t chunk_limit() const;
  // Draft tokens a decoding request may verify this step with `budget_left` tokens left.
  int64_t spec_room(const Request& r, int64_t budget_left) const;
  std::vector<int32_t> logprob_order_;  // scratch for prompt logprobs' top k
  bool is_stop_token(const Request& r, int32_t token) const;
  void finish(Request& r, FinishReason reason, RequestOutput& o, double now_s);

  SchedulerConfig config_;
  KvManager& kv_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> owned_;
  std::vector<Request*> running_;
  std::deque<Request*> waiting_;
  uint64_t arrivals_ = 0;
  SchedulerStats stats_;
};

}  // namespace strata
