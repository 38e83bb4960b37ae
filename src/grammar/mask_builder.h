// The per-step token mask of one grammar state: which tokens' whole pieces the grammar
// accepts next. A depth-first walk over the vocabulary trie (vocab_index.h) carries the
// state after each prefix, so a prefix shared by many tokens is matched once and a
// subtree the grammar rejects is skipped whole. All buffers are reused from step to
// step: after warm-up a mask allocates nothing.
#pragma once

#include <cstdint>
#include <span>
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
  // Returns the number of tokens left.
  int32_t apply(const Matcher& state, std::span<float> logits);

  Stepper& stepper() { return stepper_; }

 private:
  struct Level {
    StackSet stacks;
    Partial partial;
  };
  std::shared_ptr<const CompiledGrammar> grammar_;
  Stepper stepper_;
  std::vector<Level> levels_;  // [depth] the state after the first `depth` bytes
  std::vector<std::pair<uint32_t, uint32_t>> path_;  // (node, next child) per depth
  std::vector<uint8_t> allowed_;
};

}  // namespace strata::grammar
