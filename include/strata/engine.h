// strata's public engine API: submit token prompts, step the engine, read outputs.
//
//   Engine engine(model, pool, config);
//   RequestId id = engine.add_request(prompt_tokens, options);
//   while (engine.has_work()) for (const RequestOutput& o : engine.step()) { ... }
//
// One thread steps the engine; EngineLoop (engine/engine_loop.h) is the thread-safe
// front that lets other threads submit and abort while it does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "kv/kv_cache.h"
#include "kv/kv_manager.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "sample/sampling_params.h"
#include "sched/scheduler.h"
#include "trace/tracer.h"

namespace strata {

enum class FinishReason { kNone, kStop, kLength, kAbort };
std::string_view finish_reason_name(FinishReason reason);

struct StopConditions {
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;               // end-of-generation tokens are suppressed before this
  std::vector<int32_t> stop_token_ids;  // in addition to the model's end-of-generation ids
  std::vector<std::string> stop_strings;  // checked on text by the OutputProcessor
  bool ignore_eos = false;
};

struct RequestOptions {
  SamplingParams sampling;
  StopConditions stop;
  int32_t priority = 0;  // lower runs first under the priority policy
  std::string cache_salt;
  int32_t logprobs = -1;  // -1: none; k >= 0: the chosen token's logprob and the top k
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // (token, logprob), most likely first
};

struct RequestOutput {
  RequestId id = 0;
  std::vector<int32_t> new_tokens;      // tokens generated this step (excludes stop tokens)
  std::vector<TokenLogprob> logprobs;   // one per new token when asked
  FinishReason finish = FinishReason::kNone;
  int32_t n_prompt = 0;
  int32_t n_cached_prompt = 0;  // prompt tokens served from the prefix cache
  int32_t n_generated = 0;      // total so far
  // Timings in seconds, set when the request finishes.
  double queue_s = 0, ttft_s = 0, e2e_s = 0;
  bool finished() const { return finish != FinishReason::kNone; }
};

struct EngineConfig {
  int64_t kv_cache_tokens = 0;  // pool size in tokens; 0 = from kv_cache_mem or a default
  uint64_t kv_cache_mem = 0;    // pool size in bytes (used when kv_cache_tokens is 0)
  int32_t block_size = 16;
  int64_t context_length = 0;  // per-request context limit; 0 = the model's
  DType kv_type = DType::F32;
  bool prefix_cache = true;
  SchedulerConfig scheduler;
  std::vector<int32_t> eog_tokens;  // the model's end-of-generation ids
  // Sparse attention: which KV heads are streaming (sink + window); dense by default.
  // When head_modes is dense and head_map is enabled, the engine resolves head_map
  // against the model's shape.
  HeadModes head_modes;
  HeadMapOptions head_map;
  // Not owned. When set, the engine records step spans and scheduling instants into it
  // and installs it on the model (Model::set_tracer) for the forward-pass spans.
  Tracer* tracer = nullptr;
};

struct EngineMetrics {
  int64_t running = 0, waiting = 0;
  KvUsage kv;
  int64_t prefix_queries_tokens = 0, prefix_hits_tokens = 0;
  int64_t preemptions = 0;
  int64_t prompt_tokens_total = 0, generation_tokens_total = 0;
  int64_t steps = 0;
  int64_t kv_evictions = 0;
  KvUsage kv_stream;             // the streaming heads' pool (sparse attention)
  uint64_t kv_bytes_in_use = 0;  // K/V bytes in blocks held by sequences, both pools
  int64_t kv_context_tokens = 0;  // tokens in the KV of live sequences
};

class Engine {
 public:
  Engine(Model& model, ThreadPool& pool, const EngineConfig& config);
  ~Engine();

  // Throws strata::Error naming the bad field when the request cannot be served. Reads
  // only configuration, so other threads may call it while the engine steps.
  void validate(std::span<const int32_t> prompt, const RequestOptions& options) const;
  // Validates and queues a request.
  RequestId add_request(std::vector<int32_t> prompt, const RequestOptions& options);
  // One scheduling iteration and one forward pass; outputs of every request that
  // produced a token, finished or was aborted since the last step. Valid until the next call.
  std::span<const RequestOutput> step();
  // Ends a request; its output (finish kAbort) comes with the next step. False if unknown.
  bool abort(RequestId id);
  bool has_work() const;

  EngineMetrics metrics() const;
  const KvManager& kv() const { return kv_; }
  int64_t kv_capacity_tokens() const;
  int64_t context_length() const { return context_length_; }
  const Model& model() const { return model_; }

 private:
  struct Live;
  RequestOutput& next_output(RequestId id);
  void build_batch(const SchedulerOutput& out);
  void finish(Live& live, FinishReason reason, RequestOutput& o);

  Model& model_;
  ThreadPool& pool_;
  EngineConfig config_;
  int64_t context_length_;
  KvCache cache_;
  KvManager kv_;
  Scheduler scheduler_;
  std::unordered_map<RequestId, std::unique_ptr<Live>> live_;
  RequestId next_id_ = 1;
  uint64_t arrivals_ = 0;
  int64_t prompt_tokens_total_ = 0, generation_tokens_total_ = 0, steps_ = 0;

  // Reused per-step buffers.
  std::vector<RequestOutput> outputs_;
  size_t n_outputs_ = 0;
  std::vector<RequestId> pending_aborts_;
  std::vector<int32_t> tokens_, positions_, seq_index_, logit_rows_;
  std::vector<SequenceView> views_;
  std::vector<int32_t> sampled_slot_;  // per scheduled request: logits row or -1
  std::vector<float> row_;             // (n_vocab) working copy of one logits row
};

}  // namespace strata
