#include "grammar/mask_cache.h"

#include <algorithm>

namespace strata::grammar {

uint64_t MaskCache::hash(const StackSet& s, const Partial& p) {
  uint64_t h = 0xCBF29CE484222325ull ^ (static_cast<uint64_t>(p.value) << 8) ^
               static_cast<uint64_t>(p.remaining * 8 + p.length);
  for (uint32_t v : s.data) h = (h ^ v) * 0x100000001B3ull;
  for (uint32_t e : s.ends) h = (h ^ (e + 0x9E3779B9u)) * 0x100000001B3ull;
  return h ^ (h >> 31);
}

namespace {

bool same(const StackSet& a, const Partial& pa, const StackSet& b, const Partial& pb) {
  return pa.value == pb.value && pa.remaining == pb.remaining && pa.length == pb.length &&
         a.data == b.data && a.ends == b.ends;
}

}  // namespace

bool MaskCache::find(uint64_t h, const StackSet& s, const Partial& p,
                     std::vector<uint64_t>& bits) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!slots_.empty()) {
    const Entry& e = slots_[h % kSlots];
    if (e.used && e.hash == h && same(e.stacks, e.partial, s, p)) {
      bits.assign(e.bits.begin(), e.bits.end());
      ++hits_;
      return true;
    }
  }
  ++misses_;
  return false;
}

void MaskCache::insert(uint64_t h, const StackSet& s, const Partial& p,
                       const std::vector<uint64_t>& bits) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slots_.empty()) slots_.resize(kSlots);
  Entry& e = slots_[h % kSlots];
  e.used = true;
  e.hash = h;
  e.stacks = s;
  e.partial = p;
  e.bits.assign(bits.begin(),
                bits.begin() + static_cast<ptrdiff_t>(std::min(bits.size(), n_words_)));
}

int64_t MaskCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

int64_t MaskCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace strata::grammar
