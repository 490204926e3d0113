// The registry: a map of connections under a mutex; eviction picks the
// oldest `since` among those reading.
#include "api/connection_registry.h"

#include <vector>

namespace plimsoll::api {

std::optional<uint64_t> ConnectionRegistry::admit(std::function<void()> close) {
  std::function<void()> evicted;
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (static_cast<int>(entries_.size()) >= max_connections_) {
      auto oldest = entries_.end();
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->second.reading && (oldest == entries_.end() || it->second.since < oldest->second.since)) oldest = it;
      }
      if (oldest == entries_.end()) return std::nullopt;
      evicted = std::move(oldest->second.close);
      entries_.erase(oldest);
      ++evictions_;
    }
    id = ++next_id_;
    entries_[id] = Entry{std::move(close), true, Clock::now(), -1};
  }
  if (evicted) evicted();
  return id;
}

void ConnectionRegistry::set_reading(uint64_t id, bool reading, bool continues) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.reading = reading;
  if (reading && !continues) {
    it->second.since = Clock::now();
    it->second.tenant = -1;
  }
}

std::vector<int64_t> ConnectionRegistry::busy_locked() const {
  std::vector<int64_t> busy(shares_.tenants(), 0);
  for (const auto& [id, e] : entries_) {
    if (e.tenant >= 0) ++busy[static_cast<size_t>(e.tenant)];
  }
  return busy;
}

std::vector<int64_t> ConnectionRegistry::busy() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return busy_locked();
}

ConnectionRegistry::Served ConnectionRegistry::try_serve(uint64_t id, size_t tenant) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return {};
  tenant = tenant < shares_.tenants() ? tenant : 0;
  it->second.tenant = -1;  // not counted against itself
  const std::vector<int64_t> busy = busy_locked();
  if (!shares_.fits(tenant, 1, busy)) return {false, busy[tenant], shares_.limit(tenant, busy)};
  it->second.tenant = static_cast<int>(tenant);
  return {};
}

void ConnectionRegistry::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.erase(id);
}

void ConnectionRegistry::close_all() {
  std::vector<std::function<void()>> closers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [id, e] : entries_) closers.push_back(e.close);
  }
  for (auto& c : closers) c();
}

size_t ConnectionRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

uint64_t ConnectionRegistry::evictions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return evictions_;
}

}  // namespace plimsoll::api
