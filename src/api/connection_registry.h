// ConnectionRegistry: the open connections and their cap (--max-connections).
// At the cap a new connection evicts the one that has been reading its
// request longest, head or body (an idle keep-alive connection, a slow
// client, a lingering close), as nginx and Apache's mod_reqtimeout do, so a
// liveness probe still gets in; only when every open connection is being
// served (its request read) is the new one refused.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

namespace plimsoll::api {

class ConnectionRegistry {
 public:
  explicit ConnectionRegistry(int max_connections) : max_connections_(max_connections) {}

  // Registers a connection (reading its head from now on) with what closes
  // it. At the cap, evicts the longest reader first (its `close` runs
  // outside the lock); nullopt when every open connection is busy.
  std::optional<uint64_t> admit(std::function<void()> close);
  // Marks the connection as reading a request (evictable) or not. Reading
  // from now on restarts its clock; `continues` keeps the clock of the head
  // it is reading the body of, so a slow body ranks by its request's age.
  void set_reading(uint64_t id, bool reading, bool continues = false);
  void remove(uint64_t id);
  // Calls every connection's `close`.
  void close_all();
  size_t size() const;
  uint64_t evictions() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::function<void()> close;
    bool reading = true;
    Clock::time_point since;
  };

  const int max_connections_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace plimsoll::api
