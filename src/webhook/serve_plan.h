// The memory plan a container's `plimsoll serve` would make: its settings and
// the declared model turned into PlanInputs, planned by plan_memory itself.
#pragma once

#include <cstdint>

#include "memory/memory_plan.h"
#include "webhook/container_settings.h"
#include "webhook/model_metadata.h"

namespace plimsoll::webhook {

// HTTP request bodies serve counts into its runtime bytes (serve.cpp: one
// payload / 8 per worker that can read a body at once).
int64_t serve_http_buffer_bytes(const ServeConfig& serve);

// PlanInputs as engine_setup builds them, with the declared model in place of
// the file and runtime_bytes declared instead of measured. threads: the
// engine threads the server would use.
PlanInputs serve_plan_inputs(const ServeConfig& serve, const ModelMetadata& model, int64_t threads,
                             int64_t budget_bytes);

// The engine threads: --threads, else every CPU of the node (serve uses its affinity mask).
int64_t serve_threads(const ContainerSettings& settings, int64_t node_cpus);

}  // namespace plimsoll::webhook
