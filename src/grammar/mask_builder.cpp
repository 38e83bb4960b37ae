#include "grammar/mask_builder.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace strata::grammar {

MaskBuilder::MaskBuilder(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(grammar_->grammar()) {
  level_state_.resize(grammar_->vocab().max_piece_bytes() + 1);
  allowed_.resize(static_cast<size_t>(grammar_->vocab().n_vocab()));
}

int32_t MaskBuilder::build(const Matcher& state, std::vector<uint8_t>& allowed) {
  const VocabIndex& v = grammar_->vocab();
  const auto& nodes = v.nodes();
  allowed.assign(static_cast<size_t>(v.n_vocab()), 0);
  int32_t n_allowed = 0;
  if (state.accepting()) {
    for (int32_t t : v.eog()) {
      if (t >= 0 && t < v.n_vocab() && !allowed[static_cast<size_t>(t)]) {
        allowed[static_cast<size_t>(t)] = 1;
        ++n_allowed;
      }
    }
  }
  n_states_ = 0;
  by_hash_.clear();
  transitions_.clear();
  scratch_.stacks = state.stacks();
  scratch_.partial = state.partial();
  level_state_[0] = intern(scratch_);
  path_.clear();
  path_.emplace_back(0u, 0u);
  while (!path_.empty()) {
    auto& [node_id, next] = path_.back();
    const VocabIndex::Node& node = nodes[node_id];
    if (next == node.n_children) {
      path_.pop_back();
      continue;
    }
    const uint32_t child_id = node.first_child + next++;
    const VocabIndex::Node& child = nodes[child_id];
    const size_t depth = path_.size();  // the child's depth
    const uint32_t from = level_state_[depth - 1];
    const uint64_t key = (static_cast<uint64_t>(from) << 8) | child.byte;
    uint32_t to;
    if (const auto it = transitions_.find(key); it != transitions_.end()) {
      to = it->second;
    } else {
      const State& f = states_[from];
      to = stepper_.accept_byte(f.stacks, f.partial, child.byte, scratch_.stacks, scratch_.partial)
               ? intern(scratch_)
               : kDead;
      transitions_.emplace(key, to);
    }
    if (to == kDead) continue;  // no token under this prefix is allowed
    level_state_[depth] = to;
    for (int32_t t : v.tokens(child)) {
      allowed[static_cast<size_t>(t)] = 1;
      ++n_allowed;
    }
    if (child.n_children) path_.emplace_back(child_id, 0u);
  }
  return n_allowed;
}

uint32_t MaskBuilder::intern(const State& s) {
  const uint64_t h = MaskCache::hash(s.stacks, s.partial);
  const auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const State& o = states_[it->second];
    if (o.partial.value == s.partial.value && o.partial.remaining == s.partial.remaining &&
        o.partial.length == s.partial.length && o.stacks.data == s.stacks.data &&
        o.stacks.ends == s.stacks.ends)
      return it->second;
  }
  if (n_states_ == states_.size()) states_.emplace_back();
  states_[n_states_] = s;  // copy-assignment keeps the slot's capacity
  by_hash_.emplace(h, static_cast<uint32_t>(n_states_));
  return static_cast<uint32_t>(n_states_++);
}

int32_t MaskBuilder::apply(const Matcher& state, std::span<float> logits) {
  MaskCache& cache = grammar_->mask_cache();
  const uint64_t h = MaskCache::hash(state.stacks(), state.partial());
  if (!cache.find(h, state.stacks(), state.partial(), bits_)) {
    int32_t n = build(state, allowed_);
    if (n == 0) {
      // Nothing the grammar allows is spellable: only ending the sequence remains.
      for (int32_t t : grammar_->vocab().eog()) {
        if (t >= 0 && static_cast<size_t>(t) < allowed_.size())
          allowed_[static_cast<size_t>(t)] = 1;
      }
    }
    bits_.assign((allowed_.size() + 63) / 64, 0);
    for (size_t i = 0; i < allowed_.size(); ++i) {
      if (allowed_[i]) bits_[i / 64] |= uint64_t{1} << (i % 64);
    }
    cache.insert(h, state.stacks(), state.partial(), bits_);
  }
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  int32_t n = 0;
  const size_t size = logits.size();
  for (size_t w = 0; w < bits_.size() && w * 64 < size; ++w) {
    const uint64_t word = bits_[w];
    n += std::popcount(word);
    if (word == ~uint64_t{0}) continue;
    const size_t end = std::min(size, w * 64 + 64);
    for (size_t i = w * 64; i < end; ++i) {
      if (!((word >> (i % 64)) & 1)) logits[i] = kNever;
    }
  }
  for (size_t i = bits_.size() * 64; i < size; ++i) logits[i] = kNever;
  return n;
}

}  // namespace strata::grammar
