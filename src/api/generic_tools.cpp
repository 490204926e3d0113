// The generic tool-call format (generic_tools.h).
#include "api/generic_tools.h"

#include <optional>
#include <utility>

namespace plimsoll::api {
namespace {

// Schemas keep the client's key order: properties are written in it.
using json = nlohmann::ordered_json;
using ordered_json = nlohmann::ordered_json;

// A function whose parameters list no properties (and no additionalProperties
// schema) takes `{}`: as a free-form object beside the other choices its
// automaton would pass the state limit, and such tools take no arguments.
json parameters_of(const ToolFunction& f) {
  const json& p = f.parameters;
  const auto props = p.find("properties");
  const bool listed = props != p.end() && props->is_object() && !props->empty();
  const auto extra = p.find("additionalProperties");
  if (listed || (extra != p.end() && extra->is_object()) || p.contains("anyOf") || p.contains("oneOf") ||
      p.contains("$ref") || p.contains("allOf")) {
    return p;
  }
  return {{"type", "object"}, {"additionalProperties", false}};
}

// Local references in function k's parameters ("#", "#/$defs/X",
// "#/definitions/X") point into its own schema; inside the combined schema
// they are renamed into the root's $defs ("t<k>", "t<k>_X", "t<k>d_X").
void rename_refs(json& v, size_t k) {
  if (v.is_array()) {
    for (json& item : v) rename_refs(item, k);
    return;
  }
  if (!v.is_object()) return;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key() == "$ref" && it->is_string()) {
      const std::string ref = it->get<std::string>();
      const std::string tag = "#/$defs/t" + std::to_string(k);
      if (ref == "#") *it = tag;
      else if (ref.rfind("#/$defs/", 0) == 0) *it = tag + "_" + ref.substr(8);
      else if (ref.rfind("#/definitions/", 0) == 0) *it = tag + "d_" + ref.substr(14);
    } else {
      rename_refs(*it, k);
    }
  }
}

// Function k's parameters with their definitions moved into `defs`.
json hoisted_parameters(const ToolFunction& f, size_t k, json* defs) {
  json p = parameters_of(f);
  const std::string tag = "t" + std::to_string(k);
  for (const auto& [section, prefix] : {std::pair<const char*, std::string>{"$defs", tag + "_"},
                                        std::pair<const char*, std::string>{"definitions", tag + "d_"}}) {
    const auto it = p.find(section);
    if (it == p.end() || !it->is_object()) continue;
    for (auto& [name, def] : it->items()) {
      json moved = def;
      rename_refs(moved, k);
      (*defs)[prefix + name] = std::move(moved);
    }
    p.erase(section);
  }
  rename_refs(p, k);
  if (f.parameters.dump().find("\"$ref\":\"#\"") != std::string::npos) (*defs)[tag] = p;  // "#": itself
  return p;
}

json call_schema(const ToolFunction& f, size_t k, json* defs) {
  return {{"type", "object"},
          {"properties", {{"name", {{"type", "string"}, {"const", f.name}}}, {"parameters", hoisted_parameters(f, k, defs)}}},
          {"required", {"name", "parameters"}},
          {"additionalProperties", false}};
}

json one_key_object(const char* key, json value) {
  return {{"type", "object"}, {"properties", {{key, std::move(value)}}}, {"required", {key}},
          {"additionalProperties", false}};
}

// Short, so small-context models keep room to answer: the functions as
// compact JSON ({"name", "description", "parameters"}), then the two shapes.
std::string instructions(const OrderedJson& tools, const GenericToolShape& shape) {
  OrderedJson functions = OrderedJson::array();
  if (tools.is_array()) {
    for (const OrderedJson& t : tools) functions.push_back(t.is_object() && t.contains("function") ? t["function"] : t);
  }
  std::string out = "Tools: ";
  out += functions.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out += "\nAnswer in JSON: {\"tool_calls\": [{\"name\": <tool>, \"parameters\": <its arguments>}";
  out += shape.parallel ? ", ...]}" : "]} (one call)";
  if (shape.may_respond) out += " or {\"response\": <your reply>}";
  return out;
}

// An assistant turn's calls ({"name", "arguments": object}) as the model writes them.
std::string calls_text(const OrderedJson& calls) {
  OrderedJson list = OrderedJson::array();
  for (const OrderedJson& c : calls) {
    const OrderedJson* fn = c.contains("function") ? &c["function"] : &c;
    list.push_back({{"name", fn->value("name", OrderedJson(""))}, {"parameters", parsed_arguments(fn->value("arguments", OrderedJson::object()))}});
  }
  return OrderedJson{{"tool_calls", std::move(list)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::optional<ToolCall> call_from(const ordered_json& value) {
  if (!value.is_object()) return std::nullopt;
  const auto name = value.find("name");
  if (name == value.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  auto args = value.find("parameters");
  if (args == value.end()) args = value.find("arguments");
  if (args == value.end() || !args->is_object()) return std::nullopt;
  return ToolCall{new_tool_call_id(ToolFormat::kGeneric), name->get<std::string>(),
                  args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

}  // namespace

json generic_tool_schema(const std::vector<ToolFunction>& functions, const GenericToolShape& shape) {
  json items = json::array();
  json defs = json::object();
  for (size_t k = 0; k < functions.size(); ++k) items.push_back(call_schema(functions[k], k, &defs));
  json array = {{"type", "array"}, {"minItems", 1}, {"items", items.size() == 1 ? items[0] : json{{"anyOf", items}}}};
  if (!shape.parallel) array["maxItems"] = 1;
  json calls = one_key_object("tool_calls", std::move(array));
  json out = shape.may_respond ? json{{"anyOf", {std::move(calls), one_key_object("response", {{"type", "string"}})}}}
                               : std::move(calls);
  if (!defs.empty()) out["$defs"] = std::move(defs);
  return out;
}

void add_generic_tools(const OrderedJson& tools, const GenericToolShape& shape, std::vector<ChatMessage>* messages) {
  for (ChatMessage& m : *messages) {
    if (m.role == "assistant" && m.tool_fields.is_object() && m.tool_fields.contains("tool_calls")) {
      const std::string calls = calls_text(m.tool_fields["tool_calls"]);
      m.content = m.content_null || m.content.empty() ? calls : m.content + "\n" + calls;
      m.content_null = false;
      m.content_parts = OrderedJson();
      m.tool_fields = OrderedJson();
    } else if (m.role == "tool") {
      OrderedJson response = {{"tool_call_id", m.tool_fields.is_object() ? m.tool_fields.value("tool_call_id", OrderedJson()) : OrderedJson()},
                              {"content", m.content}};
      m.role = "user";
      m.content = OrderedJson{{"tool_response", std::move(response)}}.dump(-1, ' ', false,
                                                                           nlohmann::json::error_handler_t::replace);
      m.content_parts = OrderedJson();
      m.tool_fields = OrderedJson();
    }
  }
  const std::string text = instructions(tools, shape);
  if (!messages->empty() && messages->front().role == "system") {
    ChatMessage& first = messages->front();
    first.content = first.content.empty() ? text : first.content + "\n\n" + text;
    first.content_parts = OrderedJson();
    return;
  }
  messages->insert(messages->begin(), ChatMessage{"system", text, false, OrderedJson()});
}

bool fold_system_into_user(std::vector<ChatMessage>* messages) {
  if (messages->size() < 2 || (*messages)[0].role != "system" || (*messages)[1].role != "user") return false;
  ChatMessage& user = (*messages)[1];
  user.content = (*messages)[0].content + "\n\n" + user.content;
  user.content_parts = OrderedJson();
  messages->erase(messages->begin());
  return true;
}

ParsedAnswer parse_generic_answer(const std::string& text) {
  const ordered_json value = ordered_json::parse(text, nullptr, false);
  if (!value.is_object() || value.size() != 1) return {text, {}};
  ParsedAnswer out;
  if (const auto list = value.find("tool_calls"); list != value.end()) {
    if (!list->is_array() || list->empty()) return {text, {}};
    for (const ordered_json& item : *list) {
      auto call = call_from(item);
      if (!call) return {text, {}};
      out.calls.push_back(std::move(*call));
    }
    return out;
  }
  if (const auto one = value.find("tool_call"); one != value.end()) {  // llama.cpp's single-call form
    auto call = call_from(*one);
    if (!call) return {text, {}};
    out.calls.push_back(std::move(*call));
    return out;
  }
  if (const auto reply = value.find("response"); reply != value.end()) {
    out.content = reply->is_string() ? reply->get<std::string>()
                                     : reply->dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    return out;
  }
  return {text, {}};
}

}  // namespace plimsoll::api
