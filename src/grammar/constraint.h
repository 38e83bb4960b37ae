// One sequence's grammar constraint in the engine: its state (a Matcher) and the
// buffers that compute its masks. The request owns it; ModelRunner::sample masks the
// logits row with it before sampling, and Scheduler::update_from_output advances it with
// each appended token. Speculative decoding checks a proposal on a copy of state():
//
//   grammar::Matcher m = constraint.state();
//   for (int32_t t : proposal) if (!m.advance(t, constraint.stepper())) break;  // reject
//
// or, in verification, constraint.mask(m, row) on row j with m advanced over the first j.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "grammar/compiled.h"
#include "grammar/mask_builder.h"
#include "grammar/matcher.h"

namespace strata::grammar {

class Constraint {
 public:
  explicit Constraint(std::shared_ptr<const CompiledGrammar> grammar)
      : matcher_(grammar), masks_(std::move(grammar)) {}

  // Disallowed tokens' logits become -infinity; returns how many tokens remain.
  int32_t mask(std::span<float> logits) { return masks_.apply(matcher_, logits); }
  // The same for another state of this grammar: speculative verification masks row j
  // with a copy of state() advanced over draft[0, j), so that a draft token the grammar
  // rejects has target probability 0 and is always rejected, and the residual draw
  // picks only allowed tokens.
  int32_t mask(const Matcher& state, std::span<float> logits) {
    return masks_.apply(state, logits);
  }
  // False when the grammar does not accept `token` (the state is then unchanged).
  bool advance(int32_t token) { return matcher_.advance(token, masks_.stepper()); }

  const Matcher& state() const { return matcher_; }
  Stepper& stepper() { return masks_.stepper(); }

 private:
  Matcher matcher_;
  MaskBuilder masks_;
};

}  // namespace strata::grammar
