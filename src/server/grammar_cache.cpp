#include "server/grammar_cache.h"

namespace strata::server {

std::shared_ptr<const grammar::CompiledGrammar> GrammarCache::get(const GrammarSource& source) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = index_.find(source.gbnf); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: a slow compile must not hold up other requests' lookups.
  auto compiled = compile_constraint(source, vocab_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = index_.find(source.gbnf); it != index_.end()) return it->second->second;
  lru_.emplace_front(source.gbnf, compiled);
  index_[source.gbnf] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return compiled;
}

}  // namespace strata::server
