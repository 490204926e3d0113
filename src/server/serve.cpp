// serve: set up the engine from the plan, derive the published limits, start
// the engine thread and the HTTP server, then wait for a signal and drain.
#include "server/serve.h"

#include <csignal>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include "api/api_server.h"
#include "api/chat_prompt.h"
#include "core/bytes.h"
#include "engine/grammar/grammar_cache.h"
#include "memory/heap_arenas.h"
#include "memory/process_memory.h"
#include "memory/resident_model.h"
#include "metrics/registry.h"
#include "metrics/server_metrics.h"
#include "sched/deferred_service.h"
#include "sched/engine_service.h"
#include "sched/tenants_file.h"
#include "server/service_setup.h"
#include "server/tokenizer_serve.h"

namespace plimsoll {
namespace {

// Blocks SIGTERM/SIGINT in this thread and every thread it creates later, so
// the main thread can sigwait for them.
sigset_t block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Uses only the plan (the pool and engine have moved into the service by now).
void publish_plan(metrics::ServerMetrics& m, const EngineSetup& s, const sched::ServiceLimits& l) {
  m.memory_budget_bytes.set(static_cast<double>(s.budget.budget_bytes));
  m.memory_planned_bytes.labels({"weights"}).set(static_cast<double>(s.plan.weights_bytes));
  m.memory_planned_bytes.labels({"kv"}).set(static_cast<double>(s.plan.kv_pool_bytes));
  m.memory_planned_bytes.labels({"workspace"}).set(static_cast<double>(s.plan.workspace_bytes));
  m.memory_planned_bytes.labels({"overhead"}).set(static_cast<double>(s.plan.request_bytes + s.plan.grammar_cache_bytes +
                                                                     s.plan.transport_bytes + s.plan.runtime_bytes +
                                                                     s.plan.kv_bookkeeping_bytes));
  m.kv_blocks_capacity.set(static_cast<double>(s.plan.kv_blocks));
  m.batch_max_total_tokens.set(static_cast<double>(l.max_batch_total_tokens));
  m.cache_config_info.labels({std::to_string(s.plan.inputs.block_tokens), std::to_string(s.plan.kv_blocks)}).set(1);
}

// The backstop's figures, copied at each scrape.
void publish_memory_pressure(metrics::ServerMetrics& m, const MemoryPressure& p) {
  const MemoryPressure::Figures f = p.figures();
  m.memory_limit_bytes.set(static_cast<double>(f.limit_bytes));
  m.memory_usage_bytes.set(static_cast<double>(f.usage_bytes));
  m.memory_high_water_bytes.set(static_cast<double>(f.high_water_bytes));
  m.memory_rearm_bytes.set(static_cast<double>(f.rearm_bytes));
  m.memory_pressure.set(p.active() ? 1.0 : 0.0);
  m.memory_pressure_trips_total.advance_to(static_cast<double>(p.trips()));
}

// The grammar cache's figures, copied at each scrape.
void publish_grammar_cache(metrics::ServerMetrics& m, const GrammarCache& cache) {
  const GrammarCacheStats st = cache.stats();
  m.grammar_cache_hits.advance_to(static_cast<double>(st.hits));
  m.grammar_cache_misses.advance_to(static_cast<double>(st.misses));
  m.grammar_cache_uncached.advance_to(static_cast<double>(st.uncached));
  m.grammar_cache_evictions.advance_to(static_cast<double>(st.evictions));
  m.grammar_cache_bytes.set(static_cast<double>(st.bytes));
  m.grammar_cache_entries.set(static_cast<double>(st.entries));
}

// --tenants: the scheduler's table, and the HTTP side's names and key hashes.
Status read_tenants(ServeConfig& c) {
  sched::TenantsFile file;
  if (!c.tenants_file.empty()) {
    PLIMSOLL_ASSIGN(file, sched::load_tenants_file(c.tenants_file));
  } else {
    file.tenants = sched::with_default_tenant({});
  }
  c.tenants = file.tenants;
  c.api.tenant_names.clear();
  c.api.tenant_weights.clear();
  for (const sched::TenantLimits& t : file.tenants) {
    c.api.tenant_names.push_back(t.name);
    c.api.tenant_weights.push_back(t.weight);
  }
  c.api.tenant_key_sha256 = file.key_sha256;
  if (!c.tenants_file.empty()) {
    std::string list;
    for (const sched::TenantLimits& t : file.tenants) list += fmt::format("{}{} (weight {:g})", list.empty() ? "" : ", ", t.name, t.weight);
    spdlog::info("tenants from {}: {}; the default is {}", c.tenants_file, list, file.tenants[0].name);
  }
  return {};
}

// Per-tenant figures, labelled by the tenants file's names. Rejections: the
// scheduler's (max_queued_tokens) and the HTTP side's (`http_refusals`, a
// tenant's share of workers, preparations, body budget, connections).
void publish_tenants(metrics::ServerMetrics& m, const std::vector<sched::TenantStats>& tenants,
                     const std::vector<int64_t>& http_refusals) {
  for (size_t i = 0; i < tenants.size(); ++i) {
    const sched::TenantStats& t = tenants[i];
    const int64_t refusals = t.refusals + (i < http_refusals.size() ? http_refusals[i] : 0);
    m.tenant_waiting.labels({t.name}).set(static_cast<double>(t.waiting));
    m.tenant_running.labels({t.name}).set(static_cast<double>(t.running));
    m.tenant_kv_blocks.labels({t.name}).set(static_cast<double>(t.kv_blocks));
    m.tenant_queued_tokens.labels({t.name}).set(static_cast<double>(t.queued_tokens));
    m.tenant_served_tokens.labels({t.name}).advance_to(static_cast<double>(t.served_tokens));
    m.tenant_rejections.labels({t.name}).advance_to(static_cast<double>(refusals));
    m.tenant_weight.labels({t.name}).set(t.weight);
  }
}

// The backstop: watches the cgroup the limit came from (else the process RSS)
// against --memory-high-water, and writes `pressure` for admission.
Result<std::unique_ptr<MemoryWatcher>> start_memory_watcher(const ServeConfig& c, const MemoryBudget& budget,
                                                            MemoryPressure& pressure) {
  PLIMSOLL_ASSIGN(BackstopMarks marks, backstop_marks(c.memory_high_water, budget.limit_bytes));
  const UsageSource source = usage_source_for(budget);
  MemoryWatcherConfig config;
  config.marks = marks;
  config.source = source.description();
  auto watcher = std::make_unique<MemoryWatcher>(config, [source] { return source.read(); }, pressure);
  watcher->start();
  return watcher;
}

// /v1/chat/completions' prompt format: the model's template when it has one.
// A template we cannot parse is reported at start and answers chat requests
// with 422 naming the problem (rather than silently using another format).
api::ChatPromptFormat chat_format(const ModelTokenizer& t) {
  if (t.chat_template.empty()) {
    spdlog::info("chat template: none in the model; /v1/chat/completions uses \"<role>: <content>\" lines");
    return {};
  }
  auto format = api::model_chat_format(t.chat_template, t.chat_template_source, t.bos_token, t.eos_token);
  if (format) {
    spdlog::info("chat template: {}", t.chat_template_source);
    return std::move(format).value();
  }
  spdlog::warn("{}; /v1/chat/completions will answer 422", format.error().message);
  const std::string message = "the model's chat template cannot be used: " + format.error().message;
  api::ChatPromptFormat refuse;
  refuse.render = [message](const std::vector<api::ChatMessage>&, const api::ChatRenderBudget&,
                            const OrderedJson&) -> Result<std::string> {
    return make_error(ErrorCode::kUnsupported, message);
  };
  return refuse;
}

}  // namespace

int run_serve(ServeConfig c) {
  const std::string heap = bound_heap_arenas();  // before any thread starts
  const sigset_t signals = block_shutdown_signals();
  if (serves_tokenizer_only(c)) return run_tokenizer_serve(c, signals);
  if (Status st = read_tenants(c); !st.ok()) {
    spdlog::error("{}", st.error().message);
    return 1;
  }
  auto setup = load_engine_model(c.engine);
  if (!setup) {
    spdlog::error("{}", setup.error().message);
    return 1;
  }
  EngineSetup& s = *setup;
  // Listen first: /health answers 503 until the model is planned and warmed.
  sched::ServiceLimits loading;
  loading.model_id = c.api.model_id.empty() ? s.model.path : c.api.model_id;
  sched::DeferredService front(loading);
  metrics::MetricsRegistry registry;
  metrics::ServerMetrics server_metrics(registry);
  MemoryPressure pressure;  // written by the memory watcher, read by admission and /metrics
  spdlog::info("tokenizer: {}", s.tokenizer.source);
  spdlog::info("{}", heap);
  if (s.model.generation_defaults) c.api.generation_defaults = *s.model.generation_defaults;
  // The plan's grammar cache line (--grammar-cache-memory): compiled grammars shared by requests.
  GrammarCache grammars(c.engine.grammar_cache_bytes);
  api::ApiServer http(c.api, front, *s.tokenizer.tokenizer, server_metrics, chat_format(s.tokenizer));
  if (c.engine.grammar_cache_bytes > 0) http.set_grammar_cache(&grammars);
  http.set_scrape_hook([&server_metrics, &front, &pressure, &grammars, &http] {
    const ProcessMemory mem = read_process_memory();
    server_metrics.memory_resident_bytes.set(static_cast<double>(mem.resident_bytes));
    publish_memory_pressure(server_metrics, pressure);
    publish_grammar_cache(server_metrics, grammars);
    const sched::ServiceStats st = front.stats();
    server_metrics.kv_blocks_used.set(static_cast<double>(st.kv_blocks_used));
    server_metrics.queue_size.set(static_cast<double>(st.queued_requests));
    server_metrics.batch_current_size.set(static_cast<double>(st.batch_current_size));
    server_metrics.batch_current_max_tokens.set(static_cast<double>(st.batch_current_max_tokens));
    server_metrics.prefix_cache_queried_tokens.advance_to(static_cast<double>(st.prefix_cache_queried_tokens));
    server_metrics.prefix_cache_hit_tokens.advance_to(static_cast<double>(st.prefix_cache_hit_tokens));
    server_metrics.prefix_cache_blocks.set(static_cast<double>(st.prefix_cache_blocks));
    server_metrics.prefix_cache_reclaimable_blocks.set(static_cast<double>(st.prefix_cache_reclaimable_blocks));
    server_metrics.prefix_cache_evictions.advance_to(static_cast<double>(st.prefix_cache_evictions));
    publish_tenants(server_metrics, st.tenants, http.tenant_refusals());
  });
  if (Status st = http.start(); !st.ok()) {
    spdlog::error("{}", st.error().message);
    return 1;
  }
  spdlog::info("listening on http://{}:{}; loading {}", c.api.hostname, http.port(), loading.model_id);
  if (Status st = plan_and_start_engine(c, s); !st.ok()) {
    spdlog::error("{}", st.error().message);
    return 1;
  }
  std::string table = s.plan.table();
  if (!table.empty() && table.back() == '\n') table.pop_back();
  spdlog::info("memory limit {} from {}, x {:.2f} = budget {}\n{}", format_bytes(s.budget.limit_bytes),
               s.budget.source, s.budget.fraction, format_bytes(s.budget.budget_bytes), table);
  auto limits = derive_limits(c, s);
  if (!limits) {
    spdlog::error("{}", limits.error().message);
    return 1;
  }
  auto watcher = start_memory_watcher(c, s.budget, pressure);
  if (!watcher) {
    spdlog::error("{}", watcher.error().message);
    return 1;
  }
  sched::EngineServiceConfig service_config = engine_service_config(c, s, *limits);
  service_config.memory_pressure = &pressure;
  publish_plan(server_metrics, s, *limits);
  sched::EngineService service(service_config, std::move(s.engine), std::move(s.pool), *s.tokenizer.tokenizer);
  front.attach(&service);
  spdlog::info("plimsoll serving {} on http://{}:{} (max {} tokens per request, {} KV tokens in all)\n"
               "try: curl -s localhost:{}/generate -H 'Content-Type: application/json' "
               "-d '{{\"inputs\":\"Once upon a time\",\"parameters\":{{\"max_new_tokens\":40}}}}'",
               limits->model_id, c.api.hostname, http.port(), limits->max_total_tokens,
               limits->max_batch_total_tokens, http.port());
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}: draining for up to {:.0f} s", sig == SIGTERM ? "SIGTERM" : "SIGINT",
               c.graceful_timeout_seconds);
  http.stop_preparing();  // compiles and renders in progress stop at once; admitted work drains
  service.shutdown(c.graceful_timeout_seconds);
  http.stop();
  http.wait();
  (*watcher)->stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace plimsoll
