// Each tenant's share of a plan: weights over the pool's blocks and full sequences.
#include "planner/tenant_shares.h"

#include <algorithm>
#include <fmt/format.h>

namespace plimsoll::planner {
namespace {

TenantShare share_of(const sched::TenantLimits& t, double total_weight, const MemoryPlan& plan) {
  TenantShare s;
  s.name = t.name;
  s.weight = t.weight;
  s.share = t.weight / total_weight;
  s.kv_blocks_at_share = static_cast<int64_t>(s.share * static_cast<double>(plan.kv_blocks));
  s.sequences_at_share = static_cast<int64_t>(s.share * static_cast<double>(plan.full_sequences()));
  if (t.max_sequences > 0) s.sequences_at_share = std::min(s.sequences_at_share, t.max_sequences);
  s.max_sequences = t.max_sequences;
  s.max_kv_share = t.max_kv_share;
  s.cap_blocks = sched::tenant_cap_blocks(t, plan.kv_blocks);
  const int64_t per_sequence = plan.blocks_per_full_sequence;
  s.sequences_at_cap = per_sequence > 0 ? s.cap_blocks / per_sequence : 0;
  s.max_queued_tokens = t.max_queued_tokens;
  return s;
}

}  // namespace

std::vector<TenantShare> tenant_shares(const MemoryPlan& plan, const sched::TenantTable& tenants) {
  double total_weight = 0;
  for (const sched::TenantLimits& t : tenants) total_weight += t.weight;
  std::vector<TenantShare> out;
  for (const sched::TenantLimits& t : tenants) out.push_back(share_of(t, total_weight, plan));
  return out;
}

nlohmann::json tenant_shares_json(const std::vector<TenantShare>& shares) {
  nlohmann::json out = nlohmann::json::array();
  for (const TenantShare& s : shares) {
    nlohmann::json j = {{"name", s.name}, {"weight", s.weight}, {"share", s.share},
                        {"kv_blocks_at_share", s.kv_blocks_at_share}, {"sequences_at_share", s.sequences_at_share}};
    if (s.max_sequences > 0) j["max_sequences"] = s.max_sequences;
    if (s.max_kv_share > 0) {
      j["max_kv_share"] = s.max_kv_share;
      j["sequences_at_cap"] = s.sequences_at_cap;
    }
    if (s.max_queued_tokens > 0) j["max_queued_tokens"] = s.max_queued_tokens;
    out.push_back(j);
  }
  return out;
}

std::string tenant_shares_text(const std::vector<TenantShare>& shares, int64_t sequence_tokens) {
  std::string out = "tenants (shares while every tenant has work; a tenant alone gets the whole server), sequences of " +
                    std::to_string(sequence_tokens) + " tokens:\n";
  for (const TenantShare& s : shares) {
    std::string caps;
    if (s.max_sequences > 0) caps += " max_sequences " + std::to_string(s.max_sequences);
    if (s.max_kv_share > 0) caps += fmt::format(" max_kv_share {:g} ({} sequences)", s.max_kv_share, s.sequences_at_cap);
    if (s.max_queued_tokens > 0) caps += " max_queued_tokens " + std::to_string(s.max_queued_tokens);
    out += fmt::format("  {:<16} weight {:<6g} {:5.1f} %  {} KV blocks, {} sequences{}\n", s.name, s.weight,
                       100.0 * s.share, s.kv_blocks_at_share, s.sequences_at_share, caps.empty() ? "" : ";" + caps);
  }
  return out;
}

}  // namespace plimsoll::planner
