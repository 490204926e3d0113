// The admission decision for one object: for a workload, which containers run
// `plimsoll serve`, their memory plans against their requests (and their
// tenants' caps against the plans); for a tenants ConfigMap, whether serve
// would read its file; allow or deny.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "memory/memory_plan.h"
#include "planner/tenant_shares.h"

namespace plimsoll::webhook {

struct PolicyConfig {
  enum class CheckAgainst { kRequest, kLimit };
  CheckAgainst check_against = CheckAgainst::kRequest;  // the quantity the plan must fit
  bool require_model_metadata = false;  // deny a Plimsoll workload without plimsoll.dev/model-* annotations
  bool deny_partial_batch = false;      // deny when the pool holds fewer full sequences than --max-batch-size
};

// One `plimsoll serve` container and the plan made for it (when one could be made).
struct ContainerVerdict {
  std::string container;
  int64_t checked_bytes = 0;       // the memory request (or limit) the plan was made within
  std::optional<MemoryPlan> plan;
  // With --tenants and a plimsoll.dev/tenants annotation: each tenant's share of the plan.
  std::vector<planner::TenantShare> tenant_shares;
};

struct Decision {
  bool reviewed = false;           // a Plimsoll workload or tenants ConfigMap; false: passed untouched
  bool allowed = true;
  std::string message;             // why it was denied, with the numbers
  std::vector<std::string> warnings;
  std::vector<ContainerVerdict> verdicts;
  std::map<std::string, std::string> audit_annotations;  // the plan, for the audit log
};

// object: a Deployment or StatefulSet (apps/v1), or a ConfigMap labelled
// plimsoll.dev/tenants (webhook/tenants_check.h), as JSON; any other object passes.
Decision decide(const nlohmann::json& object, const PolicyConfig& policy);

}  // namespace plimsoll::webhook
