// The static plan: what `plimsoll serve` with given flags plans under a memory
// limit (plan_memory, the server's own model), read for sequences of P + N tokens.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"
#include "formats/model_config.h"
#include "memory/memory_plan.h"

namespace plimsoll::planner {

// The serve flags that shape the plan, with serve's defaults.
struct ServeShape {
  int64_t block_tokens = 16;                // --block-size
  DType kv_dtype = DType::kF16;             // --kv-cache-dtype
  int64_t step_tokens = 512;                // --max-batch-prefill-tokens
  int64_t step_seqs = 64;                   // --max-batch-size
  int64_t max_concurrent_requests = 128;    // --max-concurrent-requests
  int64_t http_threads = 256;               // --http-threads
  int64_t payload_limit_bytes = 2'000'000;  // --payload-limit
  int64_t threads = 0;                      // --threads (0: the cores available)
  double memory_fraction = 0.9;             // --memory-fraction
};

// What the plan needs to know of the model and of the process serving it.
struct ModelFacts {
  std::string path;
  ModelConfig config;
  int64_t weights_bytes = 0;
  int64_t runtime_base_bytes = 0;  // resident before planning (measured after loading, as serve does)
};

struct PlanRequest {
  ModelFacts model;
  ServeShape serve;
  int64_t prompt_tokens = 0;       // P
  int64_t max_new_tokens = 0;      // N
  int64_t memory_limit_bytes = 0;  // the container's limit
};

struct StaticPlan {
  PlanRequest request;
  MemoryPlan plan;                   // with max_total_tokens = P + N
  int64_t budget_bytes = 0;          // limit x memory fraction
  int64_t sequence_tokens = 0;       // P + N
  int64_t max_concurrent_sequences = 0;  // sequences of P + N the KV pool holds at once
  int64_t safe_client_batch_size = 0;    // what serve publishes in /info (at least 1)
  int64_t engine_threads = 0;
};

// The plan inputs serve would build (server/engine_setup.cpp) for this request.
PlanInputs serve_plan_inputs(const PlanRequest& request, int64_t budget_bytes);
// Plans; kOutOfMemory (with serve's message) when one sequence of P + N cannot fit.
Result<StaticPlan> make_static_plan(const PlanRequest& request);
// The smallest memory limit (whole MiB) under which `sequences` sequences of
// P + N run at once: a search over make_static_plan, never an inverted formula.
Result<int64_t> required_memory_limit(PlanRequest request, int64_t sequences);

}  // namespace plimsoll::planner
