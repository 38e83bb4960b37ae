// The state of one sequence in a grammar, and its transitions. A state is the set of
// pushdown stacks the text so far can be in (each stack a list of grammar positions, the
// next element to match on top) plus an unfinished UTF-8 character, if a token ended
// inside one.
//
// A Matcher is a copyable value: speculative decoding can copy it, advance the copy over
// proposed tokens (accepts / advance) and drop it to roll back. Its work is bounded: a
// state keeps at most kMaxStacks stacks of at most kMaxDepth positions, and one
// expansion does at most kMaxExpansions steps; what goes beyond is dropped (the grammar
// is then matched as if the dropped branches did not exist; docs/GRAMMAR.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {

inline constexpr size_t kMaxStacks = 4096;
inline constexpr size_t kMaxDepth = 1024;
inline constexpr size_t kMaxExpansions = 1 << 16;

// A set of stacks stored flat: stack k is data[begin(k), ends[k]).
struct StackSet {
  std::vector<uint32_t> data;
  std::vector<uint32_t> ends;

  void clear() {
    data.clear();
    ends.clear();
  }
  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  std::span<const uint32_t> stack(size_t k) const {
    const uint32_t b = k ? ends[k - 1] : 0;
    return std::span<const uint32_t>(data).subspan(b, ends[k] - b);
  }
  void add(std::span<const uint32_t> s) {
    data.insert(data.end(), s.begin(), s.end());
    ends.push_back(static_cast<uint32_t>(data.size()));
  }
  void pop_last() {
    ends.pop_back();
    data.resize(ends.empty() ? 0 : ends.back());
  }
};

// Bytes of an unfinished UTF-8 character.
struct Partial {
  uint32_t value = 0;
  int32_t remaining = 0;  // continuation bytes still to come (0: none pending)
  int32_t length = 0;     // of the whole sequence, 2..4
};

// The transition functions on (StackSet, Partial), with scratch buffers reused between
// calls. Not thread-safe; one per thread that computes transitions.
class Stepper {
 public:
  explicit Stepper(const Grammar& g) : g_(g) {}

  // Expands `s` until every stack's top is a character class (or the stack is empty,
  // meaning a complete sentence) and adds the results to `out`.
  void expand(std::span<const uint32_t> s, StackSet& out);
  // The stacks of `in` after the character `cp`, deduplicated.
  void accept_char(const StackSet& in, uint32_t cp, StackSet& out);
  // One byte: `in`/`partial` to `out`/`partial_out`. False if the byte cannot follow.
  bool accept_byte(const StackSet& in, const Partial& partial, uint8_t byte, StackSet& out,
                   Partial& partial_out);
  // Whether some stack of `s` can take a character beginning with `partial`'s bytes.
  bool partial_viable(const StackSet& s, const Partial& partial) const;
  void dedupe(StackSet& s);

  const Grammar& grammar() const { return g_; }

 private:
  const Grammar& g_;
  StackSet work_;
  std::vector<uint32_t> tmp_, advanced_;
  std::vector<std::pair<uint64_t, uint32_t>> hashes_;
  StackSet unique_;
};

class CompiledGrammar;

class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Whether `token` may come next (its whole piece is accepted). `stepper` (of this
  // grammar) holds the scratch buffers; the overloads without one make their own.
  bool accepts(int32_t token, Stepper& stepper) const;
  bool accepts(int32_t token) const;
  // Consumes `token`; false (and no change) when the grammar does not accept it. End-of-
  // generation tokens are accepted (and change nothing) when the sentence is complete.
  bool advance(int32_t token, Stepper& stepper);
  bool advance(int32_t token);
  // Consumes raw text; false (and no change) when it is not accepted.
  bool advance_text(std::string_view bytes, Stepper& stepper);
  // The text so far is a complete sentence of the grammar (end of generation allowed).
  bool accepting() const;
  // Nothing can follow and the sentence is not complete.
  bool dead() const { return stacks_.empty(); }

  const StackSet& stacks() const { return stacks_; }
  const Partial& partial() const { return partial_; }
  const CompiledGrammar& compiled() const { return *grammar_; }

 private:
  bool run_bytes(std::string_view bytes, Stepper& stepper, StackSet& out, Partial& partial) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackSet stacks_;
  Partial partial_;
  StackSet next_;  // scratch for advance, kept to reuse its capacity
};

}  // namespace strata::grammar
