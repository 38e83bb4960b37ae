#include "spec/draft_model_proposer.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace strata {

void check_same_vocabulary(const Model& draft, const Model& target) {
  const int64_t nd = draft.config().n_vocab, nt = target.config().n_vocab;
  if (nd != nt)
    throw Error("spec: the draft model's vocabulary has " + std::to_string(nd) +
                " tokens, the target's " + std::to_string(nt));
  constexpr std::string_view kTokens = "tokenizer.ggml.tokens";
  const bool hd = draft.file().has(kTokens), ht = target.file().has(kTokens);
  if (hd != ht) throw Error("spec: only one of the models has " + std::string(kTokens));
  if (!hd) return;
  const auto* a = draft.file().get_array(kTokens).strings();
  const auto* b = target.file().get_array(kTokens).strings();
  if (!a || !b) throw Error("spec: " + std::string(kTokens) + " is not a string array");
  if (a->size() != b->size())
    throw Error("spec: the models' " + std::string(kTokens) + " differ in length");
  for (size_t i = 0; i < a->size(); ++i) {
    if ((*a)[i] != (*b)[i])
      throw Error("spec: the draft model's token " + std::to_string(i) + " is '" + (*a)[i] +
                  "', the target's '" + (*b)[i] + "': different vocabularies");
  }
}

namespace {

KvManagerConfig draft_manager_config(const KvCacheConfig& cache, int32_t block_size) {
  KvManagerConfig m;
  m.n_blocks = static_cast<int32_t>(cache.n_blocks);
  m.block_size = block_size;
  m.prefix_cache = true;
  m.model_id = 0x64726166745f6b76ULL;  // its own cache: keys never meet the target's
  return m;
}

}  // namespace

DraftModelProposer::DraftModelProposer(Model& draft, const Model& target, ThreadPool& pool,
                                       const DraftModelConfig& config)
    : model_(draft),
      pool_(pool),
      config_(config),
      cache_(draft.kv_config(
          (std::max<int64_t>(config.kv_tokens, config.block_size) + config.block_size - 1) /
              config.block_size,
          config.block_size, config.kv_type)),
      kv_(draft_manager_config(cache_.config(), config.block_size)),
      passes_(draft, pool, 0) {
  check_same_vocabulary(draft, target);
  if (config.catch_up_chunk <= 0) throw Error("spec: catch_up_chunk must be positive");
}

void DraftModelProposer::release(RequestId id) {
  const auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  kv_.free(it->second.kv);
  seqs_.erase(it);
  passes_.release(id);
}

bool DraftModelProposer::sync(Request& r, Held& held) {
  // Positions whose tokens the target kept: the common prefix (the last known token is
  // the first pass's input, computed there).
  const size_t known = r.tokens.size() - 1;
  size_t valid = 0;
  const size_t upto = std::min(known, held.fed.size());
  while (valid < upto && held.fed[valid] == r.tokens[valid]) ++valid;
  held.fed.resize(valid);
  if (held.kv.block_table().empty()) {
    valid = static_cast<size_t>(kv_.match_prefix(held.kv, std::span(r.tokens).first(known)));
    held.fed.assign(r.tokens.begin(), r.tokens.begin() + static_cast<ptrdiff_t>(valid));
  } else {
    kv_.truncate(held.kv, static_cast<int64_t>(valid));
  }
  kv_.commit(held.kv, held.fed);
  if (!kv_.allocate(held.kv, static_cast<int64_t>(known) + r.spec_k)) return false;
  if (valid < known)
    pending_.push_back({&held, static_cast<int64_t>(valid), static_cast<int64_t>(known)});
  held.fed.insert(held.fed.end(), r.tokens.begin() + static_cast<ptrdiff_t>(valid),
                  r.tokens.begin() + static_cast<ptrdiff_t>(known));
  return true;
}

// Computes the pending positions of every sequence, at most catch_up_chunk tokens a pass.
void DraftModelProposer::catch_up() {
  while (!pending_.empty()) {
    tokens_.clear();
    positions_.clear();
    seq_index_.clear();
    views_.clear();
    int64_t room = config_.catch_up_chunk;
    for (auto& p : pending_) {
      if (room <= 0 || p.from >= p.to) continue;
      const int64_t to = std::min(p.to, p.from + room);
      for (int64_t pos = p.from; pos < to; ++pos) {
        tokens_.push_back(p.held->fed[static_cast<size_t>(pos)]);
        positions_.push_back(static_cast<int32_t>(pos));
        seq_index_.push_back(static_cast<int32_t>(views_.size()));
      }
      views_.push_back({p.held->kv.block_table(), static_cast<int32_t>(to), {}});
      room -= to - p.from;
      p.from = to;
    }
    model_.forward(ForwardBatch{tokens_, positions_, seq_index_, views_, {}}, cache_, pool_);
    std::erase_if(pending_, [](const Pending& p) { return p.from >= p.to; });
  }
}

void DraftModelProposer::propose(std::span<Request* const> requests) {
  drafting_.clear();
  pending_.clear();
  for (Request* r : requests) {
    r->draft.clear();
    r->draft_probs.clear();
    Held& held = seqs_[r->id];
    if (!sync(*r, held)) {
      // The draft pool is full: this request decodes plain; its draft cache starts over.
      kv_.free(held.kv);
      held.fed.clear();
      continue;
    }
    drafting_.push_back({r, {}, {}});
  }
  catch_up();
  for (auto& d : drafting_) {
    const Held& held = seqs_.at(d.request->id);
    d.block_table = held.kv.block_table();
  }
  passes_.run(drafting_, cache_);
  // The passes wrote the last known token and all but the last draft token.
  for (auto& d : drafting_) {
    Held& held = seqs_.at(d.request->id);
    held.fed.push_back(d.request->tokens.back());
    const auto& draft = d.request->draft;
    if (!draft.empty()) held.fed.insert(held.fed.end(), draft.begin(), draft.end() - 1);
  }
}

}  // namespace strata
