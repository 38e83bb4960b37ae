// The per-step token mask of one grammar state: which tokens' whole pieces the grammar
// accepts next. A depth-first walk over the vocabulary trie (vocab_index.h) carries the
// state after each prefix, so a prefix shared by many tokens is matched once and a
// subtree the grammar rejects is skipped whole. States met during one walk are interned
// and their byte transitions memoized: inside a string every ordinary character leads to
// the same next state, so of the trie's ~60k nodes (32k vocabulary) only a few thousand
// (state, byte) pairs are computed, the rest are a table lookup. Buffers are reused from
// step to step.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/compiled.h"
#include "grammar/matcher.h"

namespace strata::grammar {

class MaskBuilder {
 public:
  explicit MaskBuilder(std::shared_ptr<const CompiledGrammar> grammar);

  // allowed[id] = 1 where token id may come next (end-of-generation ids when the
  // sentence is complete). Returns the number allowed.
  int32_t build(const Matcher& state, std::vector<uint8_t>& allowed);
  // Sets the logits of the tokens `state` does not allow to -infinity. When none is
  // allowed (a vocabulary that cannot spell what the grammar needs next), only the
  // end-of-generation tokens stay, so the sequence ends instead of breaking the grammar.
  // Returns the number of tokens left. Looks the state up in the grammar's MaskCache
  // first; a miss walks the trie and fills the cache.
  int32_t apply(const Matcher& state, std::span<float> logits);

  Stepper& stepper() { return stepper_; }

 private:
  struct State {
    StackSet stacks;
    Partial partial;
  };
  static constexpr uint32_t kDead = UINT32_MAX;
  uint32_t intern(const State& s);

  std::shared_ptr<const CompiledGrammar> grammar_;
  Stepper stepper_;
  // One walk's interned states ([0, n_states_) are live; the rest keep their capacity).
  std::vector<State> states_;
  size_t n_states_ = 0;
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;
  std::unordered_map<uint64_t, uint32_t> transitions_;  // (state << 8 | byte) -> state or kDead
  State scratch_;
  std::vector<uint32_t> level_state_;  // [depth] the state after the first `depth` bytes
  std::vector<std::pair<uint32_t, uint32_t>> path_;  // (node, next child) per depth
  std::vector<uint8_t> allowed_;
  std::vector<uint64_t> bits_;  // [n_vocab / 64] the mask, as the cache stores it
};

}  // namespace strata::grammar
