// Decides one workload: finds its `plimsoll serve` containers, plans each
// within its memory request or limit with serve's own plan_serve_memory, checks
// its tenants' caps against that plan, and explains denials. Decides a tenants
// ConfigMap by parsing its file as serve would.
#include "webhook/admission_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fmt/format.h>

#include "core/bytes.h"
#include "memory/memory_budget.h"
#include "webhook/container_settings.h"
#include "webhook/tenants_check.h"
#include "server/serve_plan.h"

namespace plimsoll::webhook {
namespace {

using nlohmann::json;

const json& at_path(const json& j, std::initializer_list<const char*> path) {
  static const json null_json;
  const json* cur = &j;
  for (const char* key : path) {
    if (!cur->is_object() || !cur->contains(key)) return null_json;
    cur = &(*cur)[key];
  }
  return *cur;
}

void merge_annotations(const json& from, Annotations& into) {
  if (!from.is_object()) return;
  for (const auto& [key, value] : from.items()) {
    if (value.is_string()) into[key] = value.get<std::string>();
  }
}

// The object's annotations, overridden by the pod template's.
Annotations workload_annotations(const json& object) {
  Annotations a;
  merge_annotations(at_path(object, {"metadata", "annotations"}), a);
  merge_annotations(at_path(object, {"spec", "template", "metadata", "annotations"}), a);
  return a;
}

std::string get_or(const Annotations& a, const char* key, const std::string& fallback) {
  auto it = a.find(key);
  return it == a.end() ? fallback : it->second;
}

// The smallest memory quantity whose budget holds the fixed parts and `blocks` KV blocks.
int64_t quantity_for_blocks(const MemoryPlan& fixed_plan, int64_t blocks, double fraction) {
  const int64_t fixed = fixed_plan.planned_bytes() - fixed_plan.kv_pool_bytes - fixed_plan.kv_bookkeeping_bytes;
  const int64_t block_cost = fixed_plan.kv_block_bytes + fixed_plan.inputs.kv_bookkeeping_bytes_per_block;
  const double need = static_cast<double>(fixed + blocks * block_cost) / fraction;
  return static_cast<int64_t>(std::ceil(need)) + 1;
}

// plan_memory with room for everything: the fixed parts and block sizes, whatever the budget.
Result<MemoryPlan> unbounded_plan(PlanInputs in) {
  in.budget_bytes = std::numeric_limits<int64_t>::max() / 4;
  in.max_kv_bytes.reset();
  return plan_memory(in);
}

struct Check {
  const ContainerSettings& settings;
  const ModelMetadata& model;
  const PolicyConfig& policy;
  int64_t node_cpus;
  const std::optional<sched::TenantsFile>& tenants;  // from the plimsoll.dev/tenants annotation
  Decision& decision;

  void deny(const std::string& message) {
    decision.allowed = false;
    if (!decision.message.empty()) decision.message += "; ";
    decision.message += "container " + settings.name + ": " + message;
  }
  void warn(const std::string& message) { decision.warnings.push_back("container " + settings.name + ": " + message); }

  std::optional<int64_t> checked_quantity(std::string& what);
  void run();
  void check_plan(const MemoryPlan& plan, const std::string& within);
  void check_tenants(const MemoryPlan& plan);
};

std::optional<int64_t> Check::checked_quantity(std::string& what) {
  const ContainerResources& r = settings.resources;
  if (!r.memory_limit_bytes) {
    warn("no memory limit: serve plans within the node's memory and the node may OOM-kill it; set "
         "resources.limits.memory (and PLIMSOLL_MEMORY_LIMIT from it)");
  }
  const bool want_limit = policy.check_against == PolicyConfig::CheckAgainst::kLimit;
  if (want_limit && r.memory_limit_bytes) {
    what = "memory limit";
    return r.memory_limit_bytes;
  }
  if (r.memory_request_bytes) {
    what = "memory request";
    return r.memory_request_bytes;
  }
  warn("no memory request or limit: the memory plan was not checked");
  return std::nullopt;
}

void Check::run() {
  std::string what;
  std::optional<int64_t> quantity = checked_quantity(what);
  if (!quantity) return;
  const auto& limit = settings.resources.memory_limit_bytes;
  int64_t base = *quantity;
  if (settings.serve.engine.memory_limit_bytes) {
    if (limit && *settings.serve.engine.memory_limit_bytes > *limit) {
      return deny("--memory-limit (PLIMSOLL_MEMORY_LIMIT) " + format_bytes(*settings.serve.engine.memory_limit_bytes) +
                  " is above the container's memory limit " + format_bytes(*limit) +
                  ": serve would plan beyond its cgroup and be OOM-killed; take it from the downward API "
                  "(resourceFieldRef limits.memory)");
    }
    if (*settings.serve.engine.memory_limit_bytes < base) {
      base = *settings.serve.engine.memory_limit_bytes;
      what = "--memory-limit";
    }
  }
  auto budget = resolve_memory_budget(base, settings.serve.engine.memory_fraction);
  if (!budget) return deny(budget.error().message);
  ModelFacts facts;
  facts.config = model.config;
  facts.weights_bytes = model.weights_bytes;
  facts.runtime_bytes = model.runtime_bytes;  // declared with serve's margin
  // Without --threads the server takes every CPU of its affinity mask: the node's,
  // unless the static CPU manager pins it to its (integer) limit.
  auto inputs = serve_plan_inputs(settings.serve, facts, node_cpus, budget->budget_bytes);
  if (!inputs) return deny(inputs.error().message);
  const PlanInputs& in = *inputs;
  const std::string within = fmt::format("{} {} x memory fraction {} = budget {}", what, format_bytes(base),
                                         fmt::format("{:f}", budget->fraction).substr(0, 4),
                                         format_bytes(budget->budget_bytes));
  auto plan = plan_memory(in);
  decision.verdicts.push_back({settings.name, base, plan ? std::optional(*plan) : std::nullopt});
  if (!plan) {
    auto fixed = unbounded_plan(in);
    std::string need;
    if (fixed) {
      need = "; the smallest " + what + " that fits one sequence is " +
             format_bytes(quantity_for_blocks(*fixed, fixed->blocks_per_full_sequence, budget->fraction));
    }
    return deny(within + ": " + plan.error().message + need);
  }
  check_plan(*plan, within);
  check_tenants(*plan);
}

void Check::check_plan(const MemoryPlan& plan, const std::string& within) {
  const double fraction = settings.serve.engine.memory_fraction;
  if (const auto& want = settings.serve.max_batch_total_tokens; want && *want > plan.max_batch_total_tokens) {
    const int64_t blocks = (*want + plan.inputs.block_tokens - 1) / plan.inputs.block_tokens;
    return deny(fmt::format("MAX_BATCH_TOTAL_TOKENS {} but {} holds a KV pool of {} tokens ({} after weights {}, "
                            "workspace {}, request memory {}, grammar cache {}, transport {}, runtime {}): serve would "
                            "refuse to start; "
                            "raise it to at least {} or lower MAX_BATCH_TOTAL_TOKENS",
                            *want, within, plan.max_batch_total_tokens, format_bytes(plan.kv_pool_bytes),
                            format_bytes(plan.weights_bytes), format_bytes(plan.workspace_bytes),
                            format_bytes(plan.request_bytes), format_bytes(plan.grammar_cache_bytes),
                            format_bytes(plan.transport_bytes),
                            format_bytes(plan.runtime_bytes), format_bytes(quantity_for_blocks(plan, blocks, fraction))));
  }
  const int64_t batch = plan.workspace.step_seqs;
  if (plan.full_sequences() < batch) {
    const std::string text = fmt::format(
        "{} holds {} sequences of {} tokens at once, fewer than MAX_BATCH_SIZE {} (the rest queue; 429 beyond "
        "MAX_CONCURRENT_REQUESTS); a full batch needs {}",
        within, plan.full_sequences(), plan.max_total_tokens, batch,
        format_bytes(quantity_for_blocks(plan, batch * plan.blocks_per_full_sequence, fraction)));
    if (policy.deny_partial_batch) return deny(text);
    warn(text);
  }
}

// --tenants: the annotation's caps against the plan, each tenant's share for the audit log.
void Check::check_tenants(const MemoryPlan& plan) {
  const std::string& file = settings.serve.tenants_file;
  if (file.empty()) {
    if (tenants) warn(std::string(keys::kTenants) + " is set but serve runs without --tenants: one default tenant");
    return;
  }
  if (!tenants) {
    return warn("--tenants " + file + ": no " + keys::kTenants + " annotation carries the file, so its tenants' "
                "caps were not checked against the plan");
  }
  TenantCapsCheck caps = check_tenant_caps(plan, tenants->tenants);
  for (const std::string& d : caps.denials) deny(d);
  for (const std::string& w : caps.warnings) warn(w);
  decision.verdicts.back().tenant_shares = std::move(caps.shares);
}

void add_audit(Decision& d, const ContainerVerdict& v) {
  if (!v.plan) return;
  const std::string prefix = v.container.substr(0, 40) + ".";
  const MemoryPlan& p = *v.plan;
  d.audit_annotations[prefix + "planned-bytes"] = fmt::to_string(p.planned_bytes());
  d.audit_annotations[prefix + "weights-bytes"] = fmt::to_string(p.weights_bytes);
  d.audit_annotations[prefix + "workspace-bytes"] = fmt::to_string(p.workspace_bytes);
  d.audit_annotations[prefix + "request-bytes"] = fmt::to_string(p.request_bytes);
  d.audit_annotations[prefix + "grammar-cache-bytes"] = fmt::to_string(p.grammar_cache_bytes);
  d.audit_annotations[prefix + "transport-bytes"] = fmt::to_string(p.transport_bytes);
  d.audit_annotations[prefix + "runtime-bytes"] = fmt::to_string(p.runtime_bytes);
  d.audit_annotations[prefix + "kv-pool-bytes"] = fmt::to_string(p.kv_pool_bytes);
  d.audit_annotations[prefix + "max-batch-total-tokens"] = fmt::to_string(p.max_batch_total_tokens);
  if (!v.tenant_shares.empty()) d.audit_annotations[prefix + "tenants"] = planner::tenant_shares_json(v.tenant_shares).dump();
}

// The model metadata, or nullopt after recording why there is none.
std::optional<ModelMetadata> model_for(const Annotations& a, const PolicyConfig& policy, Decision& d) {
  if (!declares_model(a)) {
    const std::string text = "runs plimsoll serve but declares no model (plimsoll.dev/model-* annotations): "
                             "the memory plan was not checked";
    if (policy.require_model_metadata) {
      d.allowed = false;
      d.message = text;
    } else {
      d.warnings.push_back(text);
    }
    return std::nullopt;
  }
  auto m = read_model_metadata(a);
  if (!m) {
    d.allowed = false;
    d.message = m.error().message;
    return std::nullopt;
  }
  return *m;
}

// The plimsoll.dev/tenants annotation read as serve reads its tenants file; nullopt
// when absent, or after denying a file serve would refuse.
std::optional<sched::TenantsFile> tenants_for(const Annotations& a, Decision& d) {
  auto it = a.find(keys::kTenants);
  if (it == a.end()) return std::nullopt;
  auto file = read_tenants_annotation(it->second);
  if (!file) {
    d.allowed = false;
    d.message = file.error().message;
    return std::nullopt;
  }
  return *file;
}

void decide_containers(const json& containers, const Annotations& a, const PolicyConfig& policy, Decision& d) {
  const std::string wanted = get_or(a, keys::kContainer, "");
  std::vector<const json*> serve;
  for (const json& c : containers) {
    if (runs_plimsoll_serve(c, wanted)) serve.push_back(&c);
  }
  d.reviewed = !serve.empty();
  if (serve.empty()) return;
  if (get_or(a, keys::kCheck, "") == "skip") {
    d.warnings.push_back(std::string(keys::kCheck) + "=skip: the memory plan was not checked");
    return;
  }
  const std::optional<sched::TenantsFile> tenants = tenants_for(a, d);
  if (!d.allowed) return;
  const std::optional<ModelMetadata> model = model_for(a, policy, d);
  if (!model) return;
  auto cpus = parse_cpu_count(get_or(a, keys::kNodeCpus, fmt::to_string(kDefaultNodeCpus)));
  for (const json* c : serve) {
    auto settings = read_container_settings(*c);
    if (!settings) {
      d.allowed = false;
      d.message += (d.message.empty() ? "" : "; ") + settings.error().message;
      continue;
    }
    for (const std::string& w : settings->warnings) d.warnings.push_back("container " + settings->name + ": " + w);
    Check{*settings, *model, policy, cpus ? *cpus : kDefaultNodeCpus, tenants, d}.run();
  }
  for (const ContainerVerdict& v : d.verdicts) add_audit(d, v);
}

// A tenants ConfigMap: allowed when serve would read its tenants.json, else
// denied with the parser's message.
Decision decide_tenants(const json& object) {
  Decision d;
  d.reviewed = true;
  auto file = read_tenants_config_map(object);
  if (!file) {
    d.allowed = false;
    d.message = file.error().message;
    return d;
  }
  std::string names;
  for (const sched::TenantLimits& t : file->tenants) names += (names.empty() ? "" : ",") + t.name;
  d.audit_annotations["tenants"] = names;
  return d;
}

}  // namespace

Decision decide(const json& object, const PolicyConfig& policy) {
  if (is_tenants_config_map(object)) return decide_tenants(object);
  Decision d;
  const json& kind = at_path(object, {"kind"});
  if (!kind.is_string() || (kind != "Deployment" && kind != "StatefulSet")) return d;
  const json& containers = at_path(object, {"spec", "template", "spec", "containers"});
  if (!containers.is_array()) return d;
  decide_containers(containers, workload_annotations(object), policy, d);
  return d;
}

}  // namespace plimsoll::webhook
