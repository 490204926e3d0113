// What a container tells about the `plimsoll serve` it runs: whether it runs
// one, its settings (args flags over env, as serve reads them) and resources.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/serve.h"
#include "webhook/model_metadata.h"

namespace plimsoll::webhook {

// requests/limits of one container, in bytes and whole CPUs.
struct ContainerResources {
  std::optional<int64_t> memory_request_bytes;
  std::optional<int64_t> memory_limit_bytes;
  std::optional<int64_t> cpu_limit;
  std::optional<int64_t> cpu_request;
};

struct ContainerSettings {
  std::string name;
  ServeConfig serve;                        // the defaults of serve, overridden by env then args
  ContainerResources resources;
  std::vector<std::string> warnings;        // settings that could not be read
};

// True when the container runs `plimsoll serve`: command/args say so, or its
// image is named plimsoll (whose entrypoint is serve), or `wanted` names it.
bool runs_plimsoll_serve(const nlohmann::json& container, const std::string& wanted);

// Reads resources, env (values and resourceFieldRef) and args flags, every
// setting of serve's table (flags over env, as serve reads them); other args
// are warned about. Errors: a flag or quantity the server itself would refuse.
Result<ContainerSettings> read_container_settings(const nlohmann::json& container);

}  // namespace plimsoll::webhook
