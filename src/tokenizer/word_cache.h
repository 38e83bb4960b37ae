// A per-thread cache of word -> token ids. Both tokenizers encode text in independent
// runs (sentencepiece: the runs between spaces; byte-level BPE: the pre-tokenizer's
// words), and natural text repeats the same few thousand words, so most runs are
// found here instead of being merged again. Each thread has its own cache, so lookups
// take no lock; a cache belongs to one tokenizer at a time and is emptied when the
// thread switches to another one, or when it grows past its limits.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "tokenizer/string_map.h"

namespace strata::tok {

class WordCache {
 public:
  static constexpr size_t kMaxWordBytes = 64;
  static constexpr size_t kMaxWords = size_t{1} << 16;

  // The calling thread's cache, emptied first if it belonged to another tokenizer.
  static WordCache& for_tokenizer(uint64_t tokenizer_id) {
    thread_local WordCache cache;
    if (cache.owner_ != tokenizer_id) {
      cache.clear();
      cache.owner_ = tokenizer_id;
    }
    return cache;
  }

  // Appends the cached ids of `word` to `out`; false when the word is not cached.
  bool append(std::string_view word, std::vector<int32_t>& out) const {
    const int32_t index = map_.find(word);
    if (index < 0) return false;
    out.insert(out.end(), ids_.begin() + starts_[index], ids_.begin() + starts_[index + 1]);
    return true;
  }

  void store(std::string_view word, std::span<const int32_t> ids) {
    if (word.size() > kMaxWordBytes) return;
    if (map_.size() >= kMaxWords) clear();
    if (!map_.insert(word, static_cast<int32_t>(map_.size()))) return;
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    starts_.push_back(static_cast<uint32_t>(ids_.size()));
  }

 private:
  WordCache() { starts_.push_back(0); }

  void clear() {
    map_.clear();
    ids_.clear();
    starts_.assign(1, 0);
  }

  uint64_t owner_ = 0;
  StringMap map_;                 // word -> index
  std::vector<uint32_t> starts_;  // [words + 1] offsets into ids_
  std::vector<int32_t> ids_;
};

}  // namespace strata::tok
