// Drafting with a second, smaller model of the same vocabulary. It keeps its own paged
// KV cache (its layer shapes differ from the target's) with its own prefix cache; per
// request it remembers which tokens its cache holds, so after each verification it
// keeps the positions whose tokens the target accepted, rolls back the rest, and catches
// up (prompt included, in chunks) in one batched pass before drafting.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "kv/kv_cache.h"
#include "kv/kv_manager.h"
#include "spec/draft_passes.h"
#include "spec/proposer.h"

namespace strata {

struct DraftModelConfig {
  int64_t kv_tokens = 0;  // the draft's KV pool in tokens
  int32_t block_size = 16;
  DType kv_type = DType::F16;
  int64_t catch_up_chunk = 512;  // tokens per catch-up pass at most
};

class DraftModelProposer final : public Proposer {
 public:
  // Throws naming the mismatch when `draft` cannot draft for `target` (vocabulary).
  DraftModelProposer(Model& draft, const Model& target, ThreadPool& pool,
                     const DraftModelConfig& config);
  void propose(std::span<Request* const> requests) override;
  void release(RequestId id) override;

  const KvManager& kv() const { return kv_; }
  size_t n_sequences() const { return seqs_.size(); }

 private:
  struct Held {
    SequenceKv kv;
    std::vector<int32_t> fed;  // tokens whose K/V the draft cache holds, by position
  };
  // Brings `held` to the request's known tokens but the last; false if the pool is full.
  bool sync(Request& r, Held& held);
  void catch_up();

  Model& model_;
  ThreadPool& pool_;
  DraftModelConfig config_;
  KvCache cache_;
  KvManager kv_;
  DraftPasses passes_;
  std::unordered_map<RequestId, Held> seqs_;
  std::vector<DraftSequence> drafting_;
  struct Pending {
    Held* held;
    int64_t from, to;  // positions still to compute
  };
  std::vector<Pending> pending_;
  std::vector<int32_t> tokens_, positions_, seq_index_;
  std::vector<SequenceView> views_;
};

// Throws naming the first difference when the two models' vocabularies differ.
void check_same_vocabulary(const Model& draft, const Model& target);

}  // namespace strata
