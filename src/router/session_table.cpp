#include "router/session_table.h"

namespace strata::router {

SessionTable::SessionTable(size_t capacity) : capacity_(capacity) {}

std::optional<std::string> SessionTable::find(const std::string& session) {
  const auto it = map_.find(session);
  if (it == map_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->replica;
}

void SessionTable::pin(const std::string& session, const std::string& replica) {
  if (capacity_ == 0) return;
  if (const auto it = map_.find(session); it != map_.end()) {
    it->second->replica = replica;
    lru_.splice(lru_.begin(), lru_, it->second);
    return;
  }
  if (map_.size() >= capacity_) {
    map_.erase(lru_.back().session);
    lru_.pop_back();
    ++evictions_;
  }
  lru_.push_front({session, replica});
  map_.emplace(session, lru_.begin());
}

void SessionTable::forget_replica(const std::string& replica) {
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->replica == replica) {
      map_.erase(it->session);
      it = lru_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace strata::router
