#include "spec/draft_passes.h"

#include <algorithm>

namespace strata {

DraftPasses::DraftPasses(Model& model, ThreadPool& pool, int32_t n_layers)
    : model_(model), pool_(pool), n_layers_(n_layers) {
  row_.resize(static_cast<size_t>(model.config().n_vocab));
}

void DraftPasses::run(std::span<const DraftSequence> seqs, KvCache& cache) {
  for (const auto& s : seqs) {
    s.request->draft.clear();
    s.request->draft_probs.clear();
  }
  for (int32_t j = 0;; ++j) {
    tokens_.clear();
    positions_.clear();
    seq_index_.clear();
    rows_.clear();
    views_.clear();
    active_.clear();
    for (size_t i = 0; i < seqs.size(); ++i) {
      Request& r = *seqs[i].request;
      if (r.spec_k <= j || static_cast<int32_t>(r.draft.size()) != j) continue;
      const auto pos = static_cast<int64_t>(r.tokens.size()) - 1 + j;
      tokens_.push_back(j == 0 ? r.tokens.back() : r.draft.back());
      positions_.push_back(static_cast<int32_t>(pos));
      seq_index_.push_back(static_cast<int32_t>(views_.size()));
      rows_.push_back(static_cast<int32_t>(rows_.size()));
      views_.push_back({seqs[i].block_table, static_cast<int32_t>(pos + 1), seqs[i].stream_table});
      active_.push_back(static_cast<int32_t>(i));
    }
    if (active_.empty()) return;
    ForwardBatch batch{tokens_, positions_, seq_index_, views_, rows_};
    batch.n_layers = n_layers_;
    const auto logits = model_.forward(batch, cache, pool_);
    const auto n_vocab = row_.size();
    for (size_t a = 0; a < active_.size(); ++a) {
      Request& r = *seqs[static_cast<size_t>(active_[a])].request;
      r.draft.push_back(choose(r, logits.subspan(a * n_vocab, n_vocab)));
    }
  }
}

int32_t DraftPasses::choose(Request& r, std::span<const float> logits) {
  const SamplingParams& params = r.sampler.params();
  if (params.greedy()) return argmax(logits);
  auto it = samplers_.find(r.id);
  if (it == samplers_.end()) {
    SamplingParams draft_params = params;
    draft_params.seed = params.seed ^ 0x9e3779b97f4a7c15ULL;  // its own stream of draws
    it = samplers_.emplace(r.id, Sampler(draft_params, static_cast<int64_t>(row_.size()))).first;
  }
  std::copy(logits.begin(), logits.end(), row_.begin());
  history_.assign(r.tokens.begin(), r.tokens.end());
  history_.insert(history_.end(), r.draft.begin(), r.draft.end());
  Sampler& s = it->second;
  s.prepare(row_, history_);
  const int32_t tok = s.sample_prepared();
  const size_t off = r.draft_probs.size();
  r.draft_probs.resize(off + row_.size());
  s.write_probs(std::span<float>(r.draft_probs).subspan(off, row_.size()));
  return tok;
}

}  // namespace strata
