// Compiled grammars by their GBNF text, so that requests reusing a schema (the common
// case: a client sends the same response_format every time) share one compiled grammar
// and with it the masks already computed for its states (grammar/mask_cache.h).
// Bounded (least recently used out) and thread-safe: the prepare pool's threads use it.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/output_constraint.h"

namespace strata::server {

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const grammar::VocabIndex> vocab, size_t capacity = 32)
      : vocab_(std::move(vocab)), capacity_(capacity) {}

  // The compiled grammar of `source` (400 naming its field when it does not compile).
  std::shared_ptr<const grammar::CompiledGrammar> get(const GrammarSource& source);

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const grammar::CompiledGrammar>>>;
  std::shared_ptr<const grammar::VocabIndex> vocab_;
  size_t capacity_;
  std::mutex mutex_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> index_;
};

}  // namespace strata::server
