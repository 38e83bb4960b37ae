// The engine's step loop over one model: requests in, one scheduling decision, one
// forward pass and one state update per step, outputs out.
//
//   EngineCore engine(model, pool, config);
//   RequestId id = engine.add_request(prompt_tokens, options);
//   while (engine.has_work()) for (const RequestOutput& o : engine.step()) { ... }
//
// One thread steps it; EngineLoop (engine/engine_loop.h) is the thread-safe front that
// lets other threads submit and abort meanwhile, and strata::Engine (include/strata/)
// the public API around it. Every command that runs the model (serve, batch, run,
// logits, the evaluations) runs it through this class.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/thread_pool.h"
#include "disagg/kv_format.h"
#include "kv/head_modes.h"
#include "kv/kv_manager.h"
#include "model/model.h"
#include "runner/model_runner.h"
#include "sched/scheduler.h"
#include "spec/proposer.h"
#include "spec/spec_config.h"
#include "spec/spec_controller.h"
#include "strata/types.h"
#include "trace/tracer.h"

namespace strata {

enum class KvPrefault { kNone, kFirstBatch, kAll };

struct EngineConfig {
  int64_t kv_cache_tokens = 0;  // pool size in tokens; 0 = from kv_cache_mem or a default
  uint64_t kv_cache_mem = 0;    // pool size in bytes (used when kv_cache_tokens is 0)
  int32_t block_size = 16;
  // Per-request context limit; 0 = the model's trained length. A larger value is kept
  // (as llama.cpp's -c): positions past the trained length run, with whatever quality
  // the model's RoPE gives there (`strata serve` warns).
  int64_t context_length = 0;
  DType kv_type = DType::F32;
  bool prefix_cache = true;
  // KV pool memory backed at start-up (KvCache::populate) rather than at first use: none,
  // the pages of the blocks one step's batch takes first, or the whole pool.
  KvPrefault kv_prefault = KvPrefault::kNone;
  SchedulerConfig scheduler;
  std::vector<int32_t> eog_tokens;  // the model's end-of-generation ids
  // Sparse attention: which KV heads are streaming (sink + window); dense by default.
  HeadModes head_modes;
  // Speculative decoding (off by default). The draft model (SpecMethod::kDraftModel) is
  // not owned and must outlive the engine.
  SpecConfig spec;
  Model* draft_model = nullptr;
  // Not owned. When set, the engine records step spans and scheduling instants into it
  // and installs it on the model (Model::set_tracer) for the forward-pass spans.
  Tracer* tracer = nullptr;
};

// The KV element type of `--kv-type auto`: bf16 where the CPU has AVX512_BF16 (attention
// as bf16 dot products), else f16.
DType auto_kv_type();

// The KV cache and manager an engine configuration gives for a model: the one sizing
// rule, shared by the engine and the commands that drive the ModelRunner themselves.
struct KvPlan {
  KvCacheConfig cache;
  KvManagerConfig manager;
};
// The configuration as the engine runs it: the context capped at the model's, sparse
// attention's chunked prefill, the scheduler's length limit and stop ids.
EngineConfig resolved(EngineConfig config, const Model& model);
KvPlan plan_kv(const Model& model, const EngineConfig& config);

// The model identity in prefix-cache keys (KvManagerConfig::model_id): a hash of the
// GGUF's tensor table and size, so the router can compute the same keys from the file
// without loading weights.
uint64_t model_identity(const gguf::GgufFile& file);

class EngineCore {
 public:
  EngineCore(Model& model, ThreadPool& pool, const EngineConfig& config);

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

  // Prefill/decode disaggregation (engine/kv_transfer.cpp, docs/DISAGGREGATION.md): whole
  // prefix blocks of the paged pool as KV messages. Engine thread only (between steps).
  //
  // The layer table of this engine's blocks, and the bytes of one block across layers.
  std::vector<disagg::KvLayerLayout> kv_layer_layout() const;
  uint64_t kv_block_bytes() const;
  // The model identity of the prefix-cache keys (model_identity of the file).
  uint64_t model_fingerprint() const { return plan_.manager.model_id; }
  // The leading full blocks of `tokens` under `salt` that the prefix cache holds (run the
  // prefill first), with their K/V bytes per layer; stops at the first block it lacks.
  // Throws strata::Error when blocks cannot be shipped: streaming (sparse) heads, or the
  // prefix cache off.
  disagg::KvMessage export_prompt_blocks(std::span<const int32_t> tokens,
                                         const std::string& salt) const;
  // Leading full blocks of `tokens` under `salt` that the prefix cache holds (0 when the
  // cache cannot ship blocks).
  int64_t held_prefix_blocks(std::span<const int32_t> tokens, const std::string& salt) const;
  struct KvImportResult {
    int32_t imported = 0;  // blocks copied in and registered
    int32_t skipped = 0;   // blocks the prefix cache held already
  };
  // Checks `message` against this engine (model id, vocabulary, block size, layer table)
  // and copies the blocks it lacks into blocks of its pool, all of them or none, then
  // registers them in the prefix cache (cached, unreferenced), so the next request with
  // that prompt and salt hits them. Throws strata::Error, with nothing changed, when the
  // message does not fit or the pool has too few available blocks.
  KvImportResult import_blocks(const disagg::KvMessage& message);

  EngineMetrics metrics() const;
  int64_t kv_capacity_tokens() const { return kv_capacity_tokens_; }
  int64_t context_length() const { return config_.scheduler.max_model_len; }
  const EngineConfig& config() const { return config_; }
  const ModelConfig& model_config() const { return model_.config(); }

 private:
  void fail_batch(const SchedulerOutput& plan, const std::string& what);
  // Chooses each decoding request's draft length (before scheduling).
  void plan_speculation();
  // Fills the drafts of the scheduled requests that have room for one and sizes their
  // entries to them (after scheduling).
  void propose(SchedulerOutput& plan);
  void after_step(const SchedulerOutput& plan, const RunnerOutput& result);

  Model& model_;
  EngineConfig config_;
  KvPlan plan_;
  int64_t kv_capacity_tokens_;
  ModelRunner runner_;
  KvManager kv_;
  Scheduler scheduler_;
  RequestId next_id_ = 1;
  int64_t steps_ = 0;
  int64_t step_failures_ = 0;
  std::vector<RequestId> pending_aborts_;
  StepOutputs outputs_;
  std::unique_ptr<Proposer> proposer_;  // null: no speculation
  std::unique_ptr<SpecController> controller_;
  std::vector<Request*> spec_requests_;  // scratch
  double draft_s_ = 0;                   // this step's drafting time
  int32_t draft_passes_ = 0;
};

}  // namespace strata
