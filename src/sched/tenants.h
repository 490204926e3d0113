// Tenants: who shares the server. Each has a weight (its share of the KV
// pool, sequence slots and prefill tokens while others have work waiting)
// and optional caps within the server-wide limits. Plain data: the tenants
// file (sched/tenants_file.h) fills it; the scheduler and admission read it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plimsoll::sched {

struct TenantLimits {
  std::string name = "default";
  double weight = 1.0;            // > 0
  int64_t max_sequences = 0;      // running at once; 0: no cap
  double max_kv_share = 0.0;      // of the KV pool's blocks held at once, in (0, 1]; 0: no cap
  int64_t max_queued_tokens = 0;  // prompt + max_new tokens queued or running; 0: no cap
};

// Index 0 is the default tenant (requests with no known tenant). Empty: one
// default tenant with no caps.
using TenantTable = std::vector<TenantLimits>;

inline TenantTable with_default_tenant(TenantTable t) {
  if (t.empty()) t.push_back(TenantLimits{});
  return t;
}

// The KV blocks a tenant may hold at once in a pool of `pool_blocks`: its
// max_kv_share of the pool, at least one block; 0 when it has no share cap.
// The scheduler's cap, and what the planner and the webhook report.
inline int64_t tenant_cap_blocks(const TenantLimits& t, int64_t pool_blocks) {
  if (t.max_kv_share <= 0) return 0;
  const auto share = static_cast<int64_t>(t.max_kv_share * static_cast<double>(pool_blocks));
  return share < 1 ? 1 : share;
}

}  // namespace plimsoll::sched
