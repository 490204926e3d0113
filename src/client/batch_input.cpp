// Parsing of batch input lines (bad lines become per-item validation errors,
// never a failed job) and formatting of result lines.
#include "client/batch_input.h"

#include <fstream>

namespace plimsoll::client {
namespace {

using json = nlohmann::json;

ClientError invalid(const std::string& why) { return make_client_error(ErrorKind::kValidation, why); }

std::optional<ClientError> read_messages(const json& line, JobItem* item) {
  auto messages = line.find("messages");
  if (messages == line.end() || !messages->is_array() || messages->empty()) {
    return invalid("the chat route needs a non-empty \"messages\" list");
  }
  for (const json& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return invalid("each message needs string \"role\" and \"content\"");
    }
    item->messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return std::nullopt;
}

std::optional<ClientError> read_prompt(const json& line, JobItem* item) {
  for (const char* key : {"prompt", "inputs"}) {
    auto prompt = line.find(key);
    if (prompt != line.end() && prompt->is_string()) {
      item->prompt = prompt->get<std::string>();
      return std::nullopt;
    }
  }
  if (line.contains("messages")) return invalid("\"messages\" needs --route chat");
  return invalid("a string \"prompt\" is required");
}

}  // namespace

const char* route_name(Route route) {
  switch (route) {
    case Route::kGenerate: return "generate";
    case Route::kCompletions: return "completions";
    case Route::kChat: return "chat";
  }
  return "?";
}

std::optional<Route> parse_route(const std::string& name) {
  for (Route r : {Route::kGenerate, Route::kCompletions, Route::kChat}) {
    if (name == route_name(r)) return r;
  }
  return std::nullopt;
}

JobItem parse_job_line(std::string_view text, Route route) {
  JobItem item;
  json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object()) {
    item.invalid = invalid("the input line is not a JSON object");
    return item;
  }
  if (line.contains("id")) item.id = line["id"];
  auto parameters = line.find("parameters");
  if (parameters != line.end() && !parameters->is_null()) {
    if (!parameters->is_object()) {
      item.invalid = invalid("\"parameters\" must be an object");
      return item;
    }
    item.parameters = *parameters;
  }
  item.invalid = route == Route::kChat ? read_messages(line, &item) : read_prompt(line, &item);
  return item;
}

ClientResult<std::vector<JobItem>> read_job_items(const std::string& path, Route route) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_client_error(ErrorKind::kInput, "cannot read the input " + path);
  std::vector<JobItem> items;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    items.push_back(parse_job_line(line, route));
  }
  if (in.bad()) return make_client_error(ErrorKind::kInput, "cannot read the input " + path);
  return items;
}

std::string result_line(size_t index, const JobItem& item, const ItemResult& result) {
  json out = {{"index", index}};
  if (!item.id.is_null()) out["id"] = item.id;
  if (result.ok()) {
    out["generated_text"] = result->text;
    if (result->generated_tokens) out["generated_tokens"] = *result->generated_tokens;
    if (!result->finish_reason.empty()) out["finish_reason"] = result->finish_reason;
  } else {
    const ClientError& e = result.error();
    out["error"] = e.message;
    out["error_type"] = error_kind_name(e.kind);
    if (e.http_status != 0) out["status"] = e.http_status;
  }
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace plimsoll::client
