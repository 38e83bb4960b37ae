// Self-drafting by early exit: the target's first N layers, then its own final norm and
// classifier, draft over the target's own KV cache. Layers below N compute exactly what
// the full model computes for the same tokens, so the K/V the draft writes there are
// the ones the verifying pass writes again; no second file, no second cache.
#pragma once

#include "kv/kv_cache.h"
#include "spec/draft_passes.h"
#include "spec/proposer.h"

namespace strata {

class EarlyExitProposer final : public Proposer {
 public:
  // `n_layers` in [1, the model's layers).
  EarlyExitProposer(Model& model, ThreadPool& pool, KvCache& cache, int32_t n_layers);
  void propose(std::span<Request* const> requests) override;
  void release(RequestId id) override { passes_.release(id); }

 private:
  KvCache& cache_;
  DraftPasses passes_;
  std::vector<DraftSequence> seqs_;
};

}  // namespace strata
