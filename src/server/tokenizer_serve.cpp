// The tokenizer-only server: load the tokenizer, plan (runtime + transport +
// request budget within the budget), serve until a signal.
#include "server/tokenizer_serve.h"

#include <algorithm>
#include <spdlog/spdlog.h>

#include "api/api_server.h"
#include "api/body_budget.h"
#include "core/bytes.h"
#include "memory/memory_budget.h"
#include "memory/memory_plan.h"
#include "memory/process_memory.h"
#include "memory/resident_model.h"
#include "metrics/registry.h"
#include "metrics/server_metrics.h"
#include "sched/tokenizer_service.h"
#include "server/serve.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll {
namespace {

struct TokenizerPlan {
  MemoryBudget budget;
  int64_t runtime_bytes = 0;    // resident now (binary, libraries, the tokenizer) + the runtime margin
  int64_t transport_bytes = 0;  // api::transport_worst_case_bytes
  int64_t request_bytes = 0;    // --max-request-memory, else half of what is left up to 64 MiB
};

Result<TokenizerPlan> plan_tokenizer_server(const ServeConfig& c) {
  TokenizerPlan p;
  PLIMSOLL_ASSIGN(p.budget, resolve_memory_budget(c.engine.memory_limit_bytes, c.engine.memory_fraction));
  p.runtime_bytes = planned_runtime_bytes(read_process_memory().resident_bytes, 0);
  p.transport_bytes = api::transport_worst_case_bytes(c.api, c.engine.max_concurrent_requests);
  const int64_t left = p.budget.budget_bytes - p.runtime_bytes - p.transport_bytes;
  p.request_bytes = c.engine.request_budget_bytes > 0
                        ? c.engine.request_budget_bytes
                        : std::min(kDefaultRequestBudgetCapBytes, std::max<int64_t>(0, left) / 2);
  if (p.request_bytes <= 0 || p.runtime_bytes + p.transport_bytes + p.request_bytes > p.budget.budget_bytes) {
    return make_error(ErrorCode::kOutOfMemory,
                      "the tokenizer server does not fit the memory budget " + format_bytes(p.budget.budget_bytes) +
                          ": runtime " + format_bytes(p.runtime_bytes) + " + transport " +
                          format_bytes(p.transport_bytes) + " + requests " + format_bytes(p.request_bytes) +
                          "; raise --memory-limit or lower --max-connections / --max-request-memory");
  }
  return p;
}

}  // namespace

bool serves_tokenizer_only(const ServeConfig& config) { return is_tokenizer_file(config.engine.model_path); }

int run_tokenizer_serve(const ServeConfig& c, const sigset_t& signals) {
  const std::string& path = c.engine.tokenizer_path.empty() ? c.engine.model_path : c.engine.tokenizer_path;
  auto tokenizer = load_tokenizer_alone(path);
  if (!tokenizer) {
    spdlog::error("{}", tokenizer.error().message);
    return 1;
  }
  auto plan = plan_tokenizer_server(c);
  if (!plan) {
    spdlog::error("{}", plan.error().message);
    return 1;
  }
  sched::ServiceLimits limits;
  limits.model_id = c.api.model_id.empty() ? c.engine.model_path : c.api.model_id;
  limits.model_dtype = "none";
  limits.max_concurrent_requests = c.engine.max_concurrent_requests;
  limits.vocab_size = tokenizer->tokenizer->vocab_size();
  sched::TokenizerService service(limits, plan->request_bytes);
  metrics::MetricsRegistry registry;
  metrics::ServerMetrics server_metrics(registry);
  server_metrics.memory_budget_bytes.set(static_cast<double>(plan->budget.budget_bytes));
  api::ApiServer http(c.api, service, *tokenizer->tokenizer, server_metrics, api::ChatPromptFormat{});
  http.set_scrape_hook([&server_metrics] {
    server_metrics.memory_resident_bytes.set(static_cast<double>(read_process_memory().resident_bytes));
  });
  if (Status st = http.start(); !st.ok()) {
    spdlog::error("{}", st.error().message);
    return 1;
  }
  spdlog::info("tokenizer: {}", tokenizer->source);
  spdlog::info("memory budget {} ({}): runtime {} + transport {} + requests {}", format_bytes(plan->budget.budget_bytes),
               plan->budget.source, format_bytes(plan->runtime_bytes), format_bytes(plan->transport_bytes),
               format_bytes(plan->request_bytes));
  spdlog::info("plimsoll serving the tokenizer {} on http://{}:{}: /tokenize only, no model", limits.model_id,
               c.api.hostname, http.port());
  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("received {}: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  http.stop();
  http.wait();
  spdlog::info("stopped");
  return 0;
}

}  // namespace plimsoll
