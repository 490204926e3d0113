// Reads the tenants file from a ConfigMap or an annotation, and checks each
// tenant's caps against the plan: a max_kv_share below one full-length
// sequence is a tenant whose longest requests serve accepts but never starts.
#include "webhook/tenants_check.h"

#include <cmath>
#include <fmt/format.h>

#include "webhook/model_metadata.h"

namespace plimsoll::webhook {
namespace {

using nlohmann::json;

const json& member(const json& j, const char* key) {
  static const json null_json;
  return j.is_object() && j.contains(key) ? j[key] : null_json;
}

std::string config_map_name(const json& object) {
  const json& meta = member(object, "metadata");
  const json& ns = member(meta, "namespace");
  const json& name = member(meta, "name");
  const std::string n = name.is_string() ? name.get<std::string>() : "(unnamed)";
  return "ConfigMap " + (ns.is_string() ? ns.get<std::string>() + "/" : "") + n;
}

// The smallest max_kv_share, rounded up to 3 decimals, whose cap holds `blocks` of `pool`.
double share_for(int64_t blocks, int64_t pool) {
  return std::ceil(1000.0 * static_cast<double>(blocks) / static_cast<double>(pool)) / 1000.0;
}

std::string kv_share_denial(const planner::TenantShare& s, const MemoryPlan& plan) {
  return fmt::format(
      "tenant \"{}\": max_kv_share {:g} of the plan's {} KV blocks caps it at {} blocks, fewer than the {} "
      "blocks one sequence of {} tokens (MAX_TOTAL_TOKENS) needs: serve accepts such a request from it and "
      "never starts it; raise its max_kv_share to at least {:g} or lower MAX_TOTAL_TOKENS",
      s.name, s.max_kv_share, plan.kv_blocks, s.cap_blocks, plan.blocks_per_full_sequence, plan.max_total_tokens,
      share_for(plan.blocks_per_full_sequence, plan.kv_blocks));
}

std::string queued_tokens_warning(const planner::TenantShare& s, const MemoryPlan& plan) {
  return fmt::format(
      "tenant \"{}\": max_queued_tokens {} is below one request of {} tokens (MAX_TOTAL_TOKENS): such a request "
      "is let in only while the tenant has nothing else in flight",
      s.name, s.max_queued_tokens, plan.max_total_tokens);
}

}  // namespace

bool is_tenants_config_map(const json& object) {
  const json& kind = member(object, "kind");
  return kind.is_string() && kind == "ConfigMap" && member(member(object, "metadata"), "labels").contains(keys::kTenants);
}

Result<sched::TenantsFile> read_tenants_config_map(const json& object) {
  const std::string where = config_map_name(object);
  const json& text = member(member(object, "data"), keys::kTenantsDataKey);
  if (!text.is_string()) {
    return make_error(ErrorCode::kInvalidArgument,
                      where + " is labelled " + keys::kTenants + " but has no data key " + keys::kTenantsDataKey +
                          " (binaryData is not read): serve --tenants would find no file there");
  }
  return sched::parse_tenants(text.get<std::string>(), where + " key " + keys::kTenantsDataKey);
}

Result<sched::TenantsFile> read_tenants_annotation(const std::string& text) {
  return sched::parse_tenants(text, std::string("annotation ") + keys::kTenants);
}

TenantCapsCheck check_tenant_caps(const MemoryPlan& plan, const sched::TenantTable& tenants) {
  TenantCapsCheck c;
  c.shares = planner::tenant_shares(plan, tenants);
  for (const planner::TenantShare& s : c.shares) {
    if (s.cap_blocks > 0 && s.cap_blocks < plan.blocks_per_full_sequence) c.denials.push_back(kv_share_denial(s, plan));
    if (s.max_queued_tokens > 0 && s.max_queued_tokens < plan.max_total_tokens) {
      c.warnings.push_back(queued_tokens_warning(s, plan));
    }
  }
  return c;
}

}  // namespace plimsoll::webhook
