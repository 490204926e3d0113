// The tenants file (`serve --tenants FILE`, sched/tenants_file.h) as the
// webhook sees it, which cannot read files in the pod: in a ConfigMap labelled
// plimsoll.dev/tenants (data key tenants.json), and inline in a workload's
// plimsoll.dev/tenants annotation. Both are read with serve's own parser.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "memory/memory_plan.h"
#include "planner/tenant_shares.h"
#include "sched/tenants_file.h"

namespace plimsoll::webhook {

// True for a ConfigMap that carries the plimsoll.dev/tenants label (any value).
bool is_tenants_config_map(const nlohmann::json& object);
// Its tenants.json, parsed as serve parses the file; errors name the ConfigMap,
// the key, the field (a JSON pointer) and the rule, in the parser's words.
Result<sched::TenantsFile> read_tenants_config_map(const nlohmann::json& object);
// A workload's plimsoll.dev/tenants annotation, parsed as serve parses the file.
Result<sched::TenantsFile> read_tenants_annotation(const std::string& text);

// What the tenants' caps mean for a plan serve would run.
struct TenantCapsCheck {
  std::vector<planner::TenantShare> shares;  // planner::tenant_shares, as `plimsoll plan --tenants` prints them
  std::vector<std::string> denials;          // caps that never let a request serve accepts start
  std::vector<std::string> warnings;         // caps that let such a request run only alone
};
TenantCapsCheck check_tenant_caps(const MemoryPlan& plan, const sched::TenantTable& tenants);

}  // namespace plimsoll::webhook
