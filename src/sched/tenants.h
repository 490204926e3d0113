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

}  // namespace plimsoll::sched
