// Kubernetes resources as a deployment states them: a `resources` block (or a
// whole Deployment/Pod manifest holding one), in JSON or YAML -> memory limit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace plimsoll::planner {

struct ResourceProfile {
  int64_t memory_limit_bytes = 0;
  std::optional<int64_t> memory_request_bytes;
  std::string cpu_limit;  // as written ("2", "500m"), "" when absent
  std::string where;      // which block it came from, e.g. "spec.template.spec.containers[0].resources"
};

// Text is JSON when it starts with '{', else YAML. The first block with
// limits.memory wins: the block itself, else the first `resources` found depth-first.
Result<ResourceProfile> parse_resources(std::string_view text);
Result<ResourceProfile> read_resources_file(const std::string& path);

}  // namespace plimsoll::planner
