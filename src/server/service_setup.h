// From a ready engine (server/engine_setup.h) to the engine service's
// configuration: the limits it publishes and enforces, derived from the plan
// and the flags, and the scheduler's settings. Shared by `serve` and
// `generate`, so both run the same scheduler with the same limits.
#pragma once

#include "core/result.h"
#include "sched/engine_service.h"
#include "server/serve.h"

namespace plimsoll {

// /info's limits: the plan's, narrowed by flags; flags that do not fit the
// plan are kInvalidArgument naming the flag and the plan's figure.
Result<sched::ServiceLimits> derive_limits(const ServeConfig& c, const EngineSetup& s);

// The service's configuration under `limits` (no memory backstop: the caller
// sets memory_pressure where it watches one).
sched::EngineServiceConfig engine_service_config(const ServeConfig& c, const EngineSetup& s,
                                                 const sched::ServiceLimits& limits);

}  // namespace plimsoll
