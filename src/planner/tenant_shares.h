// Each tenant's share of a memory plan (the tenants file, sched/tenants_file.h):
// what it holds while every tenant has work (a tenant alone gets the whole
// server) and what its caps allow. `plimsoll plan --tenants` prints it; the
// admission webhook checks and records it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/memory_plan.h"
#include "sched/tenants.h"

namespace plimsoll::planner {

struct TenantShare {
  std::string name;
  double weight = 1.0;
  double share = 0.0;                 // weight / the sum of the weights
  int64_t kv_blocks_at_share = 0;     // share x the pool's blocks
  int64_t sequences_at_share = 0;     // share x full sequences, within max_sequences
  int64_t max_sequences = 0;          // 0: no cap
  double max_kv_share = 0.0;          // 0: no cap
  int64_t cap_blocks = 0;             // sched::tenant_cap_blocks: what the scheduler lets it hold; 0: no cap
  int64_t sequences_at_cap = 0;       // full sequences within cap_blocks (when max_kv_share is set)
  int64_t max_queued_tokens = 0;      // 0: no cap
};

// One entry per tenant, in the table's order (the default first).
std::vector<TenantShare> tenant_shares(const MemoryPlan& plan, const sched::TenantTable& tenants);
// [{"name", "weight", "share", "kv_blocks_at_share", "sequences_at_share", and
// each cap that is set: "max_sequences", "max_kv_share" with "sequences_at_cap",
// "max_queued_tokens"}]
nlohmann::json tenant_shares_json(const std::vector<TenantShare>& shares);
// A table, one line a tenant, for sequences of `sequence_tokens`.
std::string tenant_shares_text(const std::vector<TenantShare>& shares, int64_t sequence_tokens);

}  // namespace plimsoll::planner
