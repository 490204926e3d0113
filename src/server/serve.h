// `plimsoll serve`: the composition root. One validated configuration (flags
// with environment fallbacks), the wiring of engine, scheduler and HTTP API,
// signals and graceful shutdown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/api_config.h"
#include "memory/memory_watcher.h"
#include "sched/tenants.h"
#include "server/engine_setup.h"

namespace plimsoll {

// Every setting has a row in server/serve_settings.cpp (flag, env, help).
struct ServeConfig {
  EngineOptions engine;
  std::string model_revision;  // --revision: with a repo id, its branch, tag or commit
  bool hub_offline = false;    // --offline: only the Hugging Face cache
  api::ApiConfig api;
  std::optional<int64_t> max_input_tokens;        // default: max_total_tokens - 1
  std::optional<int64_t> max_batch_total_tokens;  // caps the KV pool (whole blocks); default: the plan's; larger is refused
  std::optional<int64_t> max_queued_tokens;       // default: 4 x max_batch_total_tokens
  int64_t max_waiting_tokens = 20;                // TGI: steps a blocked head may be overtaken
  double waiting_served_ratio = 1.2;              // accepted for TGI compatibility (see docs)
  double graceful_timeout_seconds = 30;
  HighWaterSetting memory_high_water;             // the backstop's mark: a fraction of the limit or bytes
  std::string tenants_file;                       // --tenants: sched/tenants_file.h ("": one default tenant)
  bool prefix_cache_across_tenants = false;       // --prefix-cache-across-tenants
  sched::TenantTable tenants;                     // read from tenants_file at start (not a flag)
};

// Runs until SIGTERM/SIGINT; returns the process exit code.
int run_serve(ServeConfig config);

}  // namespace plimsoll
