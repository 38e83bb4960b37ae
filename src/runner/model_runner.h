// Runs one scheduled step on the model: builds the ForwardBatch from a SchedulerOutput
// (flattened tokens and positions, each request's block tables, the rows whose logits
// are wanted), runs Model::forward over the KV cache it owns, and samples one token for
// every request whose step reached its last token, with logprobs where asked. The
// engine, every CLI command and the evaluations run the model through this class;
// `bench model` drives it with plans it builds itself. All buffers are reused from
// step to step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sched/runner_output.h"
#include "sched/scheduler_output.h"

namespace strata {

class ModelRunner {
 public:
  // `eog_tokens`: the model's end-of-generation ids, masked out before a request's
  // min_tokens are reached.
  ModelRunner(Model& model, ThreadPool& pool, const KvCacheConfig& cache,
              std::vector<int32_t> eog_tokens);

  // The forward pass and sampling of one step. Valid until the next call.
  const RunnerOutput& execute(const SchedulerOutput& plan);

  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  const Model& model() const { return model_; }

 private:
  void build_batch(const SchedulerOutput& plan);
  void sample(const SchedulerOutput& plan, std::span<const float> logits);
  void load_row(const Request& r, std::span<const float> src, int32_t n_generated);
  void sample_plain(Request& r, std::span<const float> src);
  void verify_draft(Request& r, std::span<const float> rows);

  Model& model_;
  ThreadPool& pool_;
  KvCache cache_;
  std::vector<int32_t> eog_tokens_;
  RunnerOutput output_;
  // Reused per-step buffers.
  std::vector<int32_t> tokens_, positions_, seq_index_, logit_rows_;
  std::vector<SequenceView> views_;
  std::vector<int32_t> sample_row_;  // [n_scheduled] logits row to sample from, or -1
  std::vector<float> row_;           // [n_vocab] working copy of one logits row
  std::vector<float> masked_;        // [n_vocab] a grammar-masked row, for its logprobs
  std::vector<int32_t> order_;       // [n_vocab] token ids, for top-k logprobs
  std::vector<int32_t> history_;     // a verified sequence's tokens plus accepted drafts
};

}  // namespace strata
