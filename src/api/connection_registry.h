// ConnectionRegistry: the open connections and their cap (--max-connections).
// At the cap a new connection evicts the one that has been reading its
// request longest, head or body (an idle keep-alive connection, a slow
// client, a lingering close), as nginx and Apache's mod_reqtimeout do, so a
// liveness probe still gets in; only when every open connection is being
// served (its request read) is the new one refused.
//
// The tenant is unknown at accept; once a request's head names it
// (try_serve), a tenant may keep at most its share (api/tenant_shares.h) of
// the cap busy being served, so one tenant's slow requests cannot make every
// connection busy: the others' reserves stay readable, evictable or theirs.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "api/tenant_shares.h"

namespace plimsoll::api {

class ConnectionRegistry {
 public:
  // `tenant_weights`: one per tenant (empty: one tenant, no per-tenant limit).
  explicit ConnectionRegistry(int max_connections, const std::vector<double>& tenant_weights = {})
      : max_connections_(max_connections), shares_(max_connections, tenant_weights) {}

  struct Served {
    bool ok = true;
    int64_t busy = 0;   // not ok: the tenant's connections being served, this one not counted
    int64_t limit = 0;  // not ok: the most it may have now
  };

  // Registers a connection (reading its head from now on) with what closes
  // it. At the cap, evicts the longest reader first (its `close` runs
  // outside the lock); nullopt when every open connection is busy.
  std::optional<uint64_t> admit(std::function<void()> close);
  // Marks the connection as reading a request (evictable) or not. Reading
  // from now on restarts its clock; `continues` keeps the clock of the head
  // it is reading the body of, so a slow body ranks by its request's age.
  // A new head (not `continues`) forgets the tenant of the request before.
  void set_reading(uint64_t id, bool reading, bool continues = false);
  // The connection (its head just read) serves a request of `tenant`:
  // counted as the tenant's (body read, handled, answered) until its next
  // head or lingering close. Not ok (and not counted) when the tenant's
  // connections serving requests are at its share of the cap.
  Served try_serve(uint64_t id, size_t tenant);
  // Per tenant: connections serving its requests.
  std::vector<int64_t> busy() const;
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
    int tenant = -1;  // the request's tenant from try_serve to its next head
  };
  std::vector<int64_t> busy_locked() const;

  const int max_connections_;
  const TenantShares shares_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Entry> entries_;
  uint64_t next_id_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace plimsoll::api
