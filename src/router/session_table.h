// Sticky sessions for `strata router`: a bounded map from a client's session id (the
// `x-session-id` header by default) to the replica that session last went to. Least
// recently used entries are evicted once `capacity` sessions are held, so the table
// never grows with the number of clients. Plain data, no locks: the router calls it
// under its replica-table lock.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

namespace strata::router {

class SessionTable {
 public:
  explicit SessionTable(size_t capacity);  // 0: sticky sessions off (nothing is kept)

  // The replica (its URL) the session is pinned to; marks the session recently used.
  std::optional<std::string> find(const std::string& session);
  // Pins `session` to `replica` (replacing any pin), evicting the least recently used
  // session when full.
  void pin(const std::string& session, const std::string& replica);
  // Drops every pin to `replica` (it left the replica set).
  void forget_replica(const std::string& replica);

  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::string session, replica;
  };
  size_t capacity_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> map_;
  uint64_t evictions_ = 0;
};

}  // namespace strata::router
