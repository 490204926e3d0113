// Report rendering: every figure once in JSON (bytes, exact) and once in a
// table (human units), plus the deployable forms.
#include "planner/report.h"

#include <cstdio>

#include "core/bytes.h"
#include "server/engine_setup.h"
#include "server/serve_settings.h"

namespace plimsoll::planner {
namespace {

using nlohmann::json;

constexpr int kHpaMemoryUtilisationPercent = 70;

std::string line(const char* f, const std::string& a, const std::string& b = "") {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a.c_str(), b.c_str());
  return buf;
}

}  // namespace

std::string ramp_text(const RampResult& r) {
  std::string s = "ramp (" + r.mode + "), limit " + format_bytes(r.limit_bytes) + ":\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "  %7s %9s %12s %12s %12s %8s %7s  %s\n", "batch", "kv blocks", "predicted",
                "peak RSS", "cgroup peak", "error", "secs", "outcome");
  s += buf;
  for (const RampStep& st : r.steps) {
    std::snprintf(buf, sizeof buf, "  %7lld %9lld %12s %12s %12s %7.1f%% %7.1f  %s\n", static_cast<long long>(st.batch),
                  static_cast<long long>(st.kv_blocks), format_bytes(st.predicted_bytes).c_str(),
                  format_bytes(st.measured_rss_bytes).c_str(),
                  st.cgroup_peak_bytes ? format_bytes(st.cgroup_peak_bytes).c_str() : "-", 100 * st.error_ratio(),
                  st.seconds, st.outcome.c_str());
    s += buf;
  }
  s += "  stopped: " + r.stopped_because + "\n";
  s += "  measured ceiling: batch " + std::to_string(r.ceiling_batch) + " at " + format_bytes(r.ceiling_bytes) +
       " (largest batch under " + std::to_string(static_cast<int>(r.stop_fraction * 100 + 0.5)) + " % of the limit)\n";
  return s;
}

namespace {

// serve's settings for this plan, with the engine threads it assumed.
ServeConfig planned_settings(const StaticPlan& p) {
  ServeConfig c = serve_config_for(p.request);
  c.engine.threads = static_cast<int>(p.engine_threads);
  return c;
}

}  // namespace

std::vector<std::string> serve_flags(const StaticPlan& p) {
  std::vector<std::string> args = render_serve_args(planned_settings(p));
  if (args.size() >= 2 && args[0] == "--model") args.erase(args.begin(), args.begin() + 2);  // serve_command has it
  return args;
}

std::string serve_command(const StaticPlan& p) { return render_serve_command(planned_settings(p)); }

std::string kubernetes_quantity(int64_t bytes) {
  if (bytes % kGiB == 0) return std::to_string(bytes / kGiB) + "Gi";
  return std::to_string((bytes + kMiB - 1) / kMiB) + "Mi";
}

namespace {

int64_t hpa_min(const PoolPlan* pool) { return pool ? pool->min_replicas : 1; }
int64_t hpa_max(const PoolPlan* pool) { return pool ? pool->max_replicas : 10; }

}  // namespace

json kubernetes_json(const StaticPlan& p, const PoolPlan* pool) {
  const std::string mem = kubernetes_quantity(p.request.memory_limit_bytes);
  const std::string cpu = std::to_string(p.engine_threads);
  json resources = {{"requests", {{"memory", mem}, {"cpu", cpu}}}, {"limits", {{"memory", mem}, {"cpu", cpu}}}};
  json hpa = {{"apiVersion", "autoscaling/v2"},
              {"kind", "HorizontalPodAutoscaler"},
              {"metadata", {{"name", "plimsoll"}}},
              {"spec",
               {{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "plimsoll"}}},
                {"minReplicas", hpa_min(pool)},
                {"maxReplicas", hpa_max(pool)},
                {"metrics", json::array({{{"type", "Resource"},
                                          {"resource",
                                           {{"name", "memory"},
                                            {"target", {{"type", "Utilization"},
                                                        {"averageUtilization", kHpaMemoryUtilisationPercent}}}}}}})}}}};
  return {{"resources", resources}, {"hpa", hpa}};
}

std::string kubernetes_yaml(const StaticPlan& p, const PoolPlan* pool) {
  const std::string mem = kubernetes_quantity(p.request.memory_limit_bytes);
  const std::string cpu = std::to_string(p.engine_threads);
  return "resources:\n  requests:\n    memory: " + mem + "\n    cpu: \"" + cpu + "\"\n  limits:\n    memory: " + mem +
         "\n    cpu: \"" + cpu + "\"\n---\n"
         "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: plimsoll\nspec:\n"
         "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: plimsoll}\n"
         "  minReplicas: " + std::to_string(hpa_min(pool)) + "\n  maxReplicas: " + std::to_string(hpa_max(pool)) +
         "\n  metrics:\n  - type: Resource\n    resource:\n      name: memory\n"
         "      target: {type: Utilization, averageUtilization: " + std::to_string(kHpaMemoryUtilisationPercent) +
         "}\n";
}

json pool_json(const PoolPlan& p) {
  return {{"requests_per_second", p.load.requests_per_second},
          {"peak_requests_per_second", p.load.peak_requests_per_second},
          {"request_seconds", p.load.request_seconds},
          {"sequences_per_replica", p.sequences_per_replica},
          {"sequences_in_flight", p.sequences_in_flight},
          {"peak_sequences_in_flight", p.peak_sequences_in_flight},
          {"replicas", p.replicas},
          {"hpa", {{"min_replicas", p.min_replicas}, {"max_replicas", p.max_replicas}}}};
}

std::string pool_text(const PoolPlan& p, const StaticPlan& plan) {
  char buf[512];
  std::string s = "\npool (inference gateway):\n";
  std::snprintf(buf, sizeof buf, "  %-22s %14lld  (min of the KV pool's %lld, max batch %lld, max requests %lld)\n",
                "sequences per replica", static_cast<long long>(p.sequences_per_replica),
                static_cast<long long>(plan.max_concurrent_sequences),
                static_cast<long long>(plan.request.serve.engine.step_seqs),
                static_cast<long long>(plan.request.serve.engine.max_concurrent_requests));
  s += buf;
  std::snprintf(buf, sizeof buf, "  %-22s %14.1f  (%g requests/s x %g s a request)\n", "in flight",
                p.sequences_in_flight, p.load.requests_per_second, p.load.request_seconds);
  s += buf;
  std::snprintf(buf, sizeof buf, "  %-22s %14lld\n", "replicas", static_cast<long long>(p.replicas));
  s += buf;
  std::snprintf(buf, sizeof buf, "  %-22s %14s  (peak %g requests/s: %.1f in flight; at least %lld)\n", "HPA replicas",
                (std::to_string(p.min_replicas) + " - " + std::to_string(p.max_replicas)).c_str(),
                p.load.peak_requests_per_second, p.peak_sequences_in_flight,
                static_cast<long long>(kMinPoolReplicas));
  s += buf;
  return s;
}

json ramp_json(const RampResult& r) {
  json steps = json::array();
  for (const RampStep& s : r.steps) {
    steps.push_back({{"batch", s.batch},
                     {"kv_blocks", s.kv_blocks},
                     {"predicted_bytes", s.predicted_bytes},
                     {"measured_rss_bytes", s.measured_rss_bytes},
                     {"cgroup_peak_bytes", s.cgroup_peak_bytes},
                     {"error_ratio", s.error_ratio()},
                     {"seconds", s.seconds},
                     {"outcome", s.outcome}});
  }
  return {{"mode", r.mode},
          {"limit_bytes", r.limit_bytes},
          {"stop_fraction", r.stop_fraction},
          {"steps", steps},
          {"stopped_because", r.stopped_because},
          {"ceiling_batch", r.ceiling_batch},
          {"ceiling_bytes", r.ceiling_bytes}};
}

json report_json(const PlanReport& rep) {
  const StaticPlan& p = rep.plan;
  const MemoryPlan& m = p.plan;
  json j = {
      {"model", {{"path", p.request.model.path},
                 {"weights_bytes", m.weights_bytes},
                 {"kv_bytes_per_token", m.kv_bytes_per_token},
                 {"context_tokens", p.request.model.config.max_seq_len},
                 {"runtime_base_bytes", p.request.model.runtime_base_bytes}}},
      {"inputs", {{"memory_limit_bytes", p.request.memory_limit_bytes},
                  {"limit_source", rep.limit_source},
                  {"memory_fraction", p.request.serve.engine.memory_fraction},
                  {"prompt_tokens", p.request.prompt_tokens},
                  {"max_new_tokens", p.request.max_new_tokens},
                  {"max_batch_prefill_tokens", p.request.serve.engine.step_tokens},
                  {"max_batch_size", p.request.serve.engine.step_seqs},
                  {"max_concurrent_requests", p.request.serve.engine.max_concurrent_requests},
                  {"block_size", p.request.serve.engine.block_tokens},
                  {"kv_cache_dtype", kv_cache_dtype_name(p.request.serve.engine.kv_dtype)},
                  {"threads", p.engine_threads}}},
      {"plan", {{"budget_bytes", p.budget_bytes},
                {"weights_bytes", m.weights_bytes},
                {"workspace_bytes", m.workspace_bytes},
                {"request_bytes", m.request_bytes},
                {"grammar_cache_bytes", m.grammar_cache_bytes},
                {"transport_bytes", m.transport_bytes},
                {"runtime_bytes", m.runtime_bytes},
                {"kv_pool_bytes", m.kv_pool_bytes},
                {"kv_blocks", m.kv_blocks},
                {"planned_bytes", m.planned_bytes()},
                {"max_total_tokens", m.max_total_tokens},
                {"max_batch_total_tokens", m.max_batch_total_tokens},
                {"max_concurrent_sequences", p.max_concurrent_sequences},
                {"safe_client_batch_size", p.safe_client_batch_size}}},
      {"serve_flags", serve_flags(p)},
      {"serve_command", serve_command(p)},
      {"kubernetes", kubernetes_json(p, rep.pool ? &*rep.pool : nullptr)}};
  if (rep.pool) j["pool"] = pool_json(*rep.pool);
  if (rep.target_concurrency) {
    j["target"] = {{"concurrency", *rep.target_concurrency}, {"memory_limit_bytes", p.request.memory_limit_bytes}};
  }
  if (rep.ramp) j["ramp"] = ramp_json(*rep.ramp);
  j["chart"] = {{"svg", rep.chart_svg_path}, {"png", rep.chart_png_path}};
  return j;
}

std::string report_text(const PlanReport& rep) {
  const StaticPlan& p = rep.plan;
  std::string s = line("model %s, sequences of %s tokens\n", p.request.model.path,
                       std::to_string(p.request.prompt_tokens) + " + " + std::to_string(p.request.max_new_tokens));
  if (rep.target_concurrency) {
    s += line("%s concurrent sequences need a memory limit of %s\n", std::to_string(*rep.target_concurrency),
              kubernetes_quantity(p.request.memory_limit_bytes));
  }
  s += line("memory limit %s (%s)\n", format_bytes(p.request.memory_limit_bytes), rep.limit_source);
  s += p.plan.table();
  s += line("  %-22s %14s\n", "max batch total tokens", std::to_string(p.plan.max_batch_total_tokens));
  s += line("  %-22s %14s\n", "max concurrent seqs", std::to_string(p.max_concurrent_sequences));
  s += line("  %-22s %14s\n", "safe client batch", std::to_string(p.safe_client_batch_size));
  if (rep.ramp) s += ramp_text(*rep.ramp);
  if (rep.pool) s += pool_text(*rep.pool, p);
  s += "\nserve with:\n  " + serve_command(p) + "\n\nkubernetes:\n" + kubernetes_yaml(p, rep.pool ? &*rep.pool : nullptr);
  if (!rep.chart_svg_path.empty()) s += "\nchart: " + rep.chart_svg_path + "\n";
  if (!rep.chart_png_path.empty()) s += "chart: " + rep.chart_png_path + "\n";
  return s;
}

}  // namespace plimsoll::planner
