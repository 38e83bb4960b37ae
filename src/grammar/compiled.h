// A grammar ready for requests: the parsed rules, the vocabulary they are matched
// against, and the initial state. Immutable and shared (std::shared_ptr) by the n
// sequences of a request; built on the server's prepare pool, never the engine thread.
#pragma once

#include <memory>
#include <string_view>

#include "grammar/gbnf_parser.h"
#include "grammar/grammar.h"
#include "grammar/mask_cache.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace strata::grammar {

class CompiledGrammar {
 public:
  CompiledGrammar(Grammar grammar, std::shared_ptr<const VocabIndex> vocab);

  const Grammar& grammar() const { return grammar_; }
  const VocabIndex& vocab() const { return *vocab_; }
  const StackSet& initial() const { return initial_; }
  // Masks computed so far, shared by every sequence using this grammar (mask_cache.h):
  // a cache, so it changes no result, and it locks itself.
  MaskCache& mask_cache() const { return masks_; }

 private:
  Grammar grammar_;
  std::shared_ptr<const VocabIndex> vocab_;
  StackSet initial_;
  mutable MaskCache masks_;
};

// Parses GBNF text and compiles it for `vocab`; throws strata::Error naming the problem.
std::shared_ptr<const CompiledGrammar> compile_gbnf(std::string_view text,
                                                    std::shared_ptr<const VocabIndex> vocab,
                                                    const GbnfLimits& limits = {});

}  // namespace strata::grammar
