// The tenants file (`--tenants FILE`): JSON,
//   {"default_tenant": "web",
//    "tenants": [{"name": "web", "weight": 3, "api_key_sha256": ["<64 hex>"],
//                 "max_sequences": 32, "max_kv_share": 0.5, "max_queued_tokens": 200000}, ...]}
// Only "tenants" and each "name" are required. The default tenant (named by
// "default_tenant", else the one named "default", else one added with weight 1
// and no caps) serves requests with no known tenant; it comes first in the table.
// API keys are stored as the SHA-256 of the key (lower-case hex), never in the clear.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "sched/tenants.h"

namespace plimsoll::sched {

struct TenantsFile {
  TenantTable tenants;                                  // [0]: the default tenant
  std::vector<std::pair<std::string, int32_t>> key_sha256;  // key hash (hex) -> tenant index
};

// Errors name the file, the field (a JSON pointer) and the rule broken.
Result<TenantsFile> parse_tenants(const std::string& text, const std::string& file_name);
Result<TenantsFile> load_tenants_file(const std::string& path);

}  // namespace plimsoll::sched
