// `plimsoll plan`: the memory plan for a deployment before it runs (static),
// measured on the real engine (--ramp) or on a running server (--url --ramp).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/model_reference.h"
#include "cli/serve_flags.h"
#include "core/bytes.h"
#include "core/stop_signals.h"
#include "memory/process_memory.h"
#include "memory/resident_model.h"
#include "planner/local_ramp.h"
#include "planner/pool_plan.h"
#include "planner/ramp_child.h"
#include "planner/report.h"
#include "planner/resources.h"
#include "planner/server_ramp.h"
#include "planner/svg_chart.h"
#include "planner/tenant_shares.h"
#include "sched/tenants_file.h"
#include "server/serve_settings.h"

namespace plimsoll::cli {
namespace {

using namespace plimsoll::planner;

struct PlanFlags {
  PlanRequest request;           // request.serve: serve's settings, from its table's plan rows
  ServeSettingFlags settings;
  std::string resources, resources_file;
  std::string url, chart_path;
  int64_t target_concurrency = 0;
  PoolLoad load;  // --requests-per-second etc.: the pool behind an inference gateway
  int64_t ramp_child_batch = 0;
  bool ramp = false, json = false, no_cgroup = false;
};

int fail(const Error& e) {
  spdlog::error("{}", e.message);
  return 1;
}

// The limit from --memory-limit, --resources or --resources-file; 0 when none.
Result<int64_t> given_limit(const PlanFlags& f, std::string& source) {
  if (const auto& limit = f.request.serve.engine.memory_limit_bytes) {
    source = "--memory-limit";
    return *limit;
  }
  if (f.resources.empty() && f.resources_file.empty()) return int64_t{0};
  PLIMSOLL_ASSIGN(ResourceProfile p, f.resources.empty() ? read_resources_file(f.resources_file)
                                                         : parse_resources(f.resources));
  source = "Kubernetes " + p.where + ".limits.memory" + (f.resources_file.empty() ? "" : " in " + f.resources_file);
  return p.memory_limit_bytes;
}

// Loads the model as serve does and measures the resident bytes before planning.
Result<PlanModel> model_facts(const PlanFlags& f) {
  PLIMSOLL_ASSIGN(EngineSetup s, load_engine_model(f.request.serve.engine));
  PlanModel m;
  m.path = f.request.serve.engine.model_path;
  m.config = s.model.config;
  m.weights_bytes = s.model.tensors.total_bytes();
  m.runtime_base_bytes = s.runtime_base_bytes;
  return m;
}

// The ramp child's args: P, N and serve's plan settings, rendered by the settings table.
std::vector<std::string> child_args(const PlanRequest& r) {
  std::vector<std::string> a = {"plan", "--prompt-tokens", std::to_string(r.prompt_tokens), "--max-new-tokens",
                                std::to_string(r.max_new_tokens)};
  const std::vector<std::string> settings = render_serve_args(serve_config_for(r), /*only_in_plan=*/true);
  a.insert(a.end(), settings.begin(), settings.end());
  return a;
}

void write_chart(PlanReport& rep, const std::string& svg_path, const std::string& title) {
  RampResult r;
  if (rep.ramp) {
    r = *rep.ramp;
  } else {  // static only: the predicted curve over the batches a ramp would run
    r.limit_bytes = rep.plan.request.memory_limit_bytes;
    for (int64_t b : ramp_batches(std::max<int64_t>(1, rep.plan.max_concurrent_sequences))) {
      RampStep s;
      s.batch = b;
      s.kv_blocks = kv_blocks_for_sequences(rep.plan.plan, b, rep.plan.sequence_tokens);
      s.predicted_bytes =
          predict_resident(rep.plan.plan, rep.plan.request.model.runtime_base_bytes, s.kv_blocks).total_bytes();
      r.steps.push_back(s);
    }
  }
  std::ofstream(svg_path) << ramp_chart_svg(r, title);
  rep.chart_svg_path = svg_path;
  const std::string png = svg_path.substr(0, svg_path.rfind(".svg")) + ".png";
  if (Status st = svg_to_png(svg_path, png); st.ok()) {
    rep.chart_png_path = png;
  } else {
    spdlog::info("no PNG chart: {}", st.error().message);
  }
}

std::string chart_title(const std::string& model_path, const PlanRequest& r) {
  return "plimsoll plan: " + model_path.substr(model_path.rfind('/') + 1) + ", " + std::to_string(r.prompt_tokens) +
         " + " + std::to_string(r.max_new_tokens) + " tokens a sequence";
}

int print(const PlanReport& rep, bool json, const sched::TenantTable* tenants) {
  if (json) {
    nlohmann::json j = report_json(rep);
    if (tenants) j["tenants"] = tenant_shares_json(tenant_shares(rep.plan.plan, *tenants));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s\n", report_text(rep).c_str());
    if (tenants) std::printf("%s", tenant_shares_text(tenant_shares(rep.plan.plan, *tenants), rep.plan.sequence_tokens).c_str());
  }
  return 0;
}

int run_against_server(PlanFlags& f) {
  ServerRampOptions o;
  o.url = f.url;
  o.prompt_tokens = f.request.prompt_tokens;
  o.max_new_tokens = f.request.max_new_tokens;
  o.memory_fraction = f.request.serve.engine.memory_fraction;
  std::string source;
  auto limit = given_limit(f, source);
  if (!limit) return fail(limit.error());
  o.memory_limit_bytes = *limit;
  auto ramp = run_server_ramp(o, stderr_progress_bar());
  if (!ramp) return fail(ramp.error());
  nlohmann::json j = {{"url", f.url}, {"ramp", ramp_json(*ramp)}};
  if (!f.chart_path.empty()) {
    std::ofstream(f.chart_path) << ramp_chart_svg(*ramp, "plimsoll at " + f.url);
    j["chart"] = {{"svg", f.chart_path}};
  }
  if (f.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", ramp_text(*ramp).c_str());
  }
  return 0;
}

int run(PlanFlags& f) {
  PlanRequest& r = f.request;
  if (!f.url.empty()) return run_against_server(f);
  if (r.serve.engine.model_path.empty()) return fail({ErrorCode::kInvalidArgument, "--model is required (or --url for a server)"});
  std::string source;
  auto limit = given_limit(f, source);
  if (!limit) return fail(limit.error());
  r.memory_limit_bytes = *limit;
  if (f.ramp_child_batch > 0) {
    r.model.path = r.serve.engine.model_path;
    return run_ramp_child(serve_config_for(r), f.ramp_child_batch, r.prompt_tokens, r.max_new_tokens);
  }
  auto facts = model_facts(f);
  if (!facts) return fail(facts.error());
  r.model = *facts;
  PlanReport rep;
  std::optional<sched::TenantTable> tenants;
  if (!r.serve.tenants_file.empty()) {
    auto file = sched::load_tenants_file(r.serve.tenants_file);
    if (!file) return fail(file.error());
    tenants = file->tenants;
    // As serve fills them: with several tenants the body budget's default grows (api/body_budget.h).
    for (const sched::TenantLimits& t : file->tenants) {
      r.serve.api.tenant_names.push_back(t.name);
      r.serve.api.tenant_weights.push_back(t.weight);
    }
  }
  if (f.target_concurrency > 0) {
    auto need = required_memory_limit(r, f.target_concurrency);
    if (!need) return fail(need.error());
    r.memory_limit_bytes = *need;
    rep.target_concurrency = f.target_concurrency;
    source = "smallest limit for --target-concurrency " + std::to_string(f.target_concurrency);
  }
  if (r.memory_limit_bytes <= 0) {
    return fail({ErrorCode::kInvalidArgument,
                 "give --memory-limit, --resources, --resources-file or --target-concurrency"});
  }
  auto plan = make_static_plan(r);
  if (!plan) return fail(plan.error());
  rep.plan = *plan;
  if (f.load.requests_per_second != 0 || f.load.request_seconds != 0 || f.load.peak_requests_per_second != 0) {
    auto pool = plan_pool(*plan, f.load);
    if (!pool) return fail(pool.error());
    rep.pool = *pool;
  }
  rep.limit_source = source;
  if (f.ramp) {
    LocalRampOptions o;
    o.child_args = child_args(r);
    o.use_cgroup = !f.no_cgroup;
    catch_stop_signals();  // a stop kills the step's child and removes its cgroup before exiting
    auto ramp = run_local_ramp(*plan, o, stderr_progress_bar());
    if (!ramp) return fail(ramp.error());
    rep.ramp = *ramp;
  }
  if (!f.chart_path.empty()) write_chart(rep, f.chart_path, chart_title(r.model.path, r));
  const int printed = print(rep, f.json, tenants ? &*tenants : nullptr);
  if (!stop_requested()) return printed;
  spdlog::warn("{}: stopped the ramp with {} step(s) recorded; the running child was killed and no "
               "plimsoll-ramp memory cgroup remains",
               stop_signal_name(), rep.ramp ? rep.ramp->steps.size() : size_t{0});
  return stop_exit_code();
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto f = std::make_shared<PlanFlags>();
  PlanRequest& r = f->request;
  r.prompt_tokens = 16;
  r.max_new_tokens = 256;
  CLI::App* cmd = app.add_subcommand(
      "plan", "Plan memory for a deployment: batch sizes, limits, serve flags, Kubernetes resources; --ramp measures");
  auto opt = [&](const std::string& names, auto& value, const std::string& help) {
    return cmd->add_option(names, value, help)->capture_default_str();
  };
  // serve's plan settings, the model and its tokenizer: the rows of serve's table plan accepts.
  add_serve_setting_flags(*cmd, f->settings, r.serve, {.only_in_plan = true, .with_env = false, .required = false});
  cmd->get_option("--memory-limit")
      ->description("The container's memory limit, e.g. 12Gi (or --resources, --resources-file, --target-concurrency)");
  opt("--resources", f->resources, "A Kubernetes resources block, JSON or YAML: {\"limits\":{\"memory\":\"12Gi\"}}");
  opt("--resources-file", f->resources_file, "A file holding one (a Deployment manifest will do)");
  opt("--target-concurrency", f->target_concurrency, "Instead: the memory limit C concurrent sequences need");
  opt("--prompt-tokens", r.prompt_tokens, "P: prompt tokens per sequence");
  opt("--max-new-tokens", r.max_new_tokens, "N: new tokens per sequence");
  opt("--requests-per-second", f->load.requests_per_second,
      "Target load of a pool (inference gateway): prints the replicas and HPA bounds (with --request-seconds)");
  opt("--request-seconds", f->load.request_seconds,
      "Seconds one request of P + N tokens takes in a full replica (e.g. the last step of --url --ramp)");
  opt("--peak-requests-per-second", f->load.peak_requests_per_second,
      "The load the HPA's maxReplicas must carry (default: twice --requests-per-second)");
  cmd->add_flag("--ramp", f->ramp, "Measure: run growing batches on the real engine (or --url server)");
  cmd->add_flag("--no-cgroup", f->no_cgroup, "Ramp in plain child processes even where a memory cgroup is possible");
  opt("--url", f->url, "Ramp a running server (http://host:port) instead of a local engine");
  opt("--chart", f->chart_path, "Write an SVG chart here (and a PNG beside it when rsvg-convert exists)");
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_option("--ramp-child-batch", f->ramp_child_batch)->group("");  // internal: one ramp step
  return [f] {
    ServeConfig& c = f->request.serve;
    if (Status st = apply_serve_setting_flags(f->settings, c); !st.ok()) return fail(st.error());
    HubFlags hub{c.hub_offline, c.model_revision};
    if (!c.engine.model_path.empty() && !resolve_model_in_place(c.engine.model_path, hub)) return 1;
    c.model_revision.clear();  // resolved: the path is the snapshot's folder
    c.hub_offline = false;
    return run(*f);
  };
}

}  // namespace plimsoll::cli
