#include "grammar/mask_builder.h"

#include <algorithm>
#include <limits>

namespace strata::grammar {

MaskBuilder::MaskBuilder(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), stepper_(grammar_->grammar()) {
  levels_.resize(grammar_->vocab().max_piece_bytes() + 1);
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
  levels_[0].stacks = state.stacks();
  levels_[0].partial = state.partial();
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
    Level& from = levels_[depth - 1];
    Level& to = levels_[depth];
    if (!stepper_.accept_byte(from.stacks, from.partial, child.byte, to.stacks, to.partial))
      continue;  // no token under this prefix is allowed
    for (int32_t t : v.tokens(child)) {
      allowed[static_cast<size_t>(t)] = 1;
      ++n_allowed;
    }
    if (child.n_children) path_.emplace_back(child_id, 0u);
  }
  return n_allowed;
}

int32_t MaskBuilder::apply(const Matcher& state, std::span<float> logits) {
  int32_t n = build(state, allowed_);
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  if (n == 0) {
    // Nothing the grammar allows is spellable: only ending the sequence remains.
    for (int32_t t : grammar_->vocab().eog()) {
      if (t >= 0 && static_cast<size_t>(t) < allowed_.size()) allowed_[static_cast<size_t>(t)] = 1;
    }
    n = static_cast<int32_t>(grammar_->vocab().eog().size());
  }
  const size_t m = std::min(logits.size(), allowed_.size());
  for (size_t i = 0; i < m; ++i) {
    if (!allowed_[i]) logits[i] = kNever;
  }
  for (size_t i = m; i < logits.size(); ++i) logits[i] = kNever;
  return n;
}

}  // namespace strata::grammar
