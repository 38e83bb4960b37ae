// Masks already computed for a grammar, keyed by the exact state (stacks and partial
// character) they were computed for. A state recurs often: inside an unbounded string
// every position has the same state, and the n choices of a request, or requests that
// reuse one compiled schema, pass through the same states at the same counts. A hit
// costs a hash of the state and a copy of the mask's bits instead of a trie walk.
//
// Direct-mapped and bounded: kSlots entries of n_vocab bits each; a new state evicts the
// one in its slot. Thread-safe (one mutex; the engine thread is its usual only user).
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "grammar/matcher.h"

namespace strata::grammar {

class MaskCache {
 public:
  static constexpr size_t kSlots = 128;

  explicit MaskCache(int32_t n_vocab) : n_words_((static_cast<size_t>(n_vocab) + 63) / 64) {}

  static uint64_t hash(const StackSet& s, const Partial& p);
  // Copies the cached mask of (s, p) into `bits` ([n_words] words); false on a miss.
  bool find(uint64_t h, const StackSet& s, const Partial& p, std::vector<uint64_t>& bits) const;
  void insert(uint64_t h, const StackSet& s, const Partial& p, const std::vector<uint64_t>& bits);

  int64_t hits() const;
  int64_t misses() const;

 private:
  struct Entry {
    uint64_t hash = 0;
    bool used = false;
    StackSet stacks;
    Partial partial;
    std::vector<uint64_t> bits;
  };
  size_t n_words_;
  mutable std::mutex mutex_;
  mutable std::vector<Entry> slots_;  // allocated on first insert
  mutable int64_t hits_ = 0, misses_ = 0;
};

}  // namespace strata::grammar
