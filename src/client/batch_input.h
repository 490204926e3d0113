// A batch job's files: input JSONL lines -> items for a route, and each item's
// result -> one output JSONL line {"index", "id", "generated_text" | "error", ...}.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/batch_runner.h"
#include "client/client_error.h"
#include "client/types.h"

namespace plimsoll::client {

enum class Route { kGenerate, kCompletions, kChat };

const char* route_name(Route route);
std::optional<Route> parse_route(const std::string& name);

struct JobItem {
  nlohmann::json id;                         // the input's "id" (null when absent)
  std::string prompt;                        // generate, completions
  std::vector<ChatMessage> messages;         // chat
  nlohmann::json parameters = nlohmann::json::object();  // sent as is
  std::optional<ClientError> invalid;        // the line cannot be sent (written as its result)
};

// {"prompt": "...", "parameters": {...}} or {"messages": [...]}, optional "id".
JobItem parse_job_line(std::string_view line, Route route);
// Every non-blank line of the file, in order.
ClientResult<std::vector<JobItem>> read_job_items(const std::string& path, Route route);
// The output line for item `index` (no newline).
std::string result_line(size_t index, const JobItem& item, const ItemResult& result);

}  // namespace plimsoll::client
