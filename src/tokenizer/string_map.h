// Flat open-addressing hash tables for the tokenizers' hot loops: piece text -> token id,
// and (left id, right id) -> merge. Both are built once and then only read, so lookups
// from many threads at once are safe, and a lookup never allocates (it takes a
// string_view into the text being tokenized).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace strata::tok {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xFF51AFD7ED558CCDull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix64(h ^ w);
  }
  if (i < s.size()) {
    uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    h = mix64(h ^ w ^ 0x5851F42D4C957F2Dull);
  }
  return h;
}

// The bitmap of key hashes that both tables below keep: 4 bits per slot (8+ per key, as a
// table is at most half full), so most lookups of absent keys touch only this.
class HashFilter {
 public:
  // Sized for a table of n_slots slots (a power of two, at least 16); all bits clear.
  void reset(size_t n_slots) {
    words_.assign(n_slots / 16, 0);
    mask_ = n_slots * 4 - 1;
  }
  void clear() { std::fill(words_.begin(), words_.end(), 0); }
  void add(uint64_t h) {
    const size_t bit = (h >> 20) & mask_;
    words_[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
  // False: no key with hash h was added.
  bool may_contain(uint64_t h) const {
    const size_t bit = (h >> 20) & mask_;
    return (words_[bit >> 6] & (uint64_t{1} << (bit & 63))) != 0;
  }

 private:
  std::vector<uint64_t> words_;
  size_t mask_ = 0;
};

// Maps byte strings to non-negative int32 values. Keys are copied into one buffer. A
// bitmap of key hashes (8+ bits per key) answers most lookups of absent keys without
// touching the larger slot array; the tokenizers' merge loops mostly ask for strings
// that are not pieces.
class StringMap {
 public:
  // Inserts `key` -> `value` unless the key is already present (the first value wins).
  // Returns false when the key was already present.
  bool insert(std::string_view key, int32_t value) {
    if (keys_.size() + key.size() > UINT32_MAX)
      throw Error("tokenizer: more than 4 GiB of token text");
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t h = hash_bytes(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value < 0) {
        s = {static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(h >> 32),
             static_cast<uint32_t>(key.size()), value};
        keys_.append(key);
        filter_.add(h);
        ++count_;
        return true;
      }
      if (s.hash == static_cast<uint32_t>(h >> 32) && key_of(s) == key) return false;
    }
  }

  // The value stored for `key`, or -1.
  int32_t find(std::string_view key) const {
    if (count_ == 0) return -1;
    const uint64_t h = hash_bytes(key);
    if (!filter_.may_contain(h)) return -1;
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value < 0) return -1;
      if (s.hash == static_cast<uint32_t>(h >> 32) && key_of(s) == key) return s.value;
    }
  }

  size_t size() const { return count_; }

  // Removes every key, keeping the allocated memory.
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    filter_.clear();
    keys_.clear();
    count_ = 0;
  }

 private:
  // 16 bytes, so that a probe usually touches one cache line besides the key bytes.
  struct Slot {
    uint32_t offset = 0;  // of the key in keys_
    uint32_t hash = 0;    // high half of the key's hash (the low half picks the slot)
    uint32_t length = 0;
    int32_t value = -1;  // -1: empty
  };

  std::string_view key_of(const Slot& s) const { return {keys_.data() + s.offset, s.length}; }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    filter_.reset(slots_.size());
    for (const Slot& s : old) {
      if (s.value < 0) continue;
      // Only 32 hash bits are stored, so the hash is recomputed from the key.
      const uint64_t h = hash_bytes(key_of(s));
      size_t i = h & mask_;
      while (slots_[i].value >= 0) i = (i + 1) & mask_;
      slots_[i] = s;
      filter_.add(h);
    }
  }

  std::vector<Slot> slots_;
  HashFilter filter_;
  std::string keys_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

// Maps a pair of non-negative int32 ids to a (rank, result) pair of int32 values, with
// the same absent-key bitmap as StringMap.
class PairMap {
 public:
  struct Entry {
    int32_t rank = -1;
    int32_t result = -1;
  };

  bool insert(int32_t left, int32_t right, Entry e) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    const uint64_t key = pack(left, right);
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == kEmpty) {
        s = {key, e};
        filter_.add(mix64(key));
        ++count_;
        return true;
      }
      if (s.key == key) return false;
    }
  }

  // The entry for (left, right); rank is -1 when there is none.
  Entry find(int32_t left, int32_t right) const {
    if (count_ == 0) return {};
    const uint64_t key = pack(left, right);
    const uint64_t h = mix64(key);
    if (!filter_.may_contain(h)) return {};
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == key) return s.entry;
      if (s.key == kEmpty) return {};
    }
  }

  size_t size() const { return count_; }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    Entry entry;
  };

  static uint64_t pack(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    filter_.reset(slots_.size());
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      const uint64_t h = mix64(s.key);
      size_t i = h & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
      filter_.add(h);
    }
  }

  std::vector<Slot> slots_;
  HashFilter filter_;
  size_t mask_ = 0;
  size_t count_ = 0;
};

}  // namespace strata::tok
