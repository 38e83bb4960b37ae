// The autoregressive loop of a model-based proposer: pass j feeds every drafting
// sequence's newest token (the pending one, then its draft so far) at the next position
// and appends the draft token its logits give, for up to each request's spec_k passes,
// all sequences in one batch per pass. A greedy request gets the argmax (a
// deterministic proposal); a sampling one a draw from its own sampling parameters applied
// to the draft's logits, with that distribution kept for the verifier's p/q test.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "kv/forward_batch.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "sample/sampler.h"
#include "sched/request.h"

namespace strata {

struct DraftSequence {
  Request* request = nullptr;
  std::span<const int32_t> block_table;  // in the cache the passes write to
  std::span<const int32_t> stream_table;
};

class DraftPasses {
 public:
  // `n_layers`: layers to run (0: all), as ForwardBatch::n_layers.
  DraftPasses(Model& model, ThreadPool& pool, int32_t n_layers);

  // Drafts for every sequence (the first pass's input is its last known token, at
  // position tokens.size() - 1; its blocks must cover spec_k more positions).
  void run(std::span<const DraftSequence> seqs, KvCache& cache);
  void release(RequestId id) { samplers_.erase(id); }

 private:
  int32_t choose(Request& r, std::span<const float> logits);

  Model& model_;
  ThreadPool& pool_;
  int32_t n_layers_;
  std::unordered_map<RequestId, Sampler> samplers_;  // sampling requests' draft samplers
  std::vector<int32_t> tokens_, positions_, seq_index_, rows_, active_;
  std::vector<SequenceView> views_;
  std::vector<float> row_;
  std::vector<int32_t> history_;
};

}  // namespace strata
