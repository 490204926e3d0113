// tools / tool_choice -> ToolRequest (tool_params.h).
#include "api/tool_params.h"

#include <algorithm>
#include <fmt/format.h>

#include "api/generic_tools.h"
#include "api/request_json.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll::api {
namespace {

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

// Nesting of a JSON value (a scalar is 0), iteratively.
int64_t json_depth(const json& root) {
  int64_t deepest = 0;
  std::vector<std::pair<const json*, int64_t>> stack = {{&root, 0}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    deepest = std::max(deepest, d + 1);
    for (const json& child : *v) stack.push_back({&child, d + 1});
  }
  return deepest;
}

// Tool i's parameters from the ordered list (its properties are written in
// the client's order), else `sorted` as it is.
OrderedJson parameters_in_order(const OrderedJson& ordered, size_t i, const json& sorted) {
  if (ordered.is_array() && i < ordered.size() && ordered[i].is_object()) {
    const auto fn = ordered[i].find("function");
    if (fn != ordered[i].end() && fn->is_object()) {
      const auto p = fn->find("parameters");
      if (p != fn->end() && p->is_object()) return *p;
    }
  }
  return OrderedJson(sorted);
}

// OpenAI: ^[a-zA-Z0-9_-]{1,64}$.
bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// `ordered`: the same list in the client's key order (tools_in_order), or
// null (then the tree's sorted order).
Result<std::vector<ToolFunction>> read_functions(const json& list, const OrderedJson& ordered, const ToolLimits& limits) {
  if (!list.is_array()) return invalid(std::string("`tools` must be a list, got ") + json_type_name(list));
  if (static_cast<int64_t>(list.size()) > limits.max_tools) {
    return invalid(fmt::format("`tools` holds {} tools, over the limit of {}", list.size(), limits.max_tools));
  }
  const int64_t bytes = static_cast<int64_t>(list.dump().size());
  if (bytes > limits.max_tools_bytes) {
    return invalid(fmt::format("`tools` is {} bytes as JSON, over the limit of {}", bytes, limits.max_tools_bytes));
  }
  std::vector<ToolFunction> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = fmt::format("`tools[{}]", i);
    const json& tool = list[i];
    if (!tool.is_object() || tool.value("type", json()) != "function") {
      return invalid(at + "` must be {\"type\": \"function\", \"function\": {...}}");
    }
    const auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) return invalid(at + ".function` must be an object");
    const auto name = fn->find("name");
    if (name == fn->end() || !name->is_string() || !valid_name(name->get<std::string>())) {
      return invalid(at + ".function.name` must be 1 to 64 characters of a-z, A-Z, 0-9, _ and -");
    }
    for (const ToolFunction& seen : out) {
      if (seen.name == name->get<std::string>()) return invalid(at + ".function.name` \"" + seen.name + "\" is given twice");
    }
    OrderedJson parameters = OrderedJson{{"type", "object"}};
    if (const auto p = fn->find("parameters"); p != fn->end() && !p->is_null()) {
      if (!p->is_object()) return invalid(at + ".function.parameters` must be a JSON schema object");
      const int64_t depth = json_depth(*p);
      if (depth > limits.max_schema_depth) {
        return invalid(fmt::format("{}.function.parameters` is nested {} levels, over the limit of {}", at, depth,
                                   limits.max_schema_depth));
      }
      parameters = parameters_in_order(ordered, i, *p);
    }
    out.push_back({name->get<std::string>(), std::move(parameters), i});
  }
  return out;
}

// "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}.
Result<ToolChoice> read_choice(const json* choice, std::string* named) {
  if (!choice) return ToolChoice::kAuto;
  if (choice->is_string()) {
    const std::string& s = choice->get_ref<const std::string&>();
    if (s == "none") return ToolChoice::kNone;
    if (s == "auto") return ToolChoice::kAuto;
    if (s == "required") return ToolChoice::kRequired;
  } else if (choice->is_object() && choice->value("type", json()) == "function") {
    const auto fn = choice->find("function");
    if (fn != choice->end() && fn->is_object() && fn->contains("name") && (*fn)["name"].is_string()) {
      *named = (*fn)["name"].get<std::string>();
      return ToolChoice::kNamed;
    }
  }
  return invalid("`tool_choice` must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
}

// A generic-format schema error ("schema at /anyOf/0/properties/tool_calls/
// items/anyOf/<k>/properties/parameters/...: what") named by the request's
// field: `tools[i].function.parameters`.
Error generic_schema_error(const Error& e, const std::vector<ToolFunction>& functions) {
  const std::string& m = e.message;
  const std::string marker = "/properties/parameters";
  const size_t at = m.find(marker);
  const size_t colon = m.find(": ", at == std::string::npos ? 0 : at);
  if (at == std::string::npos || colon == std::string::npos) return invalid("`tools`: " + m);
  size_t k = 0;
  const std::string any = "/items/anyOf/";
  if (const size_t a = m.rfind(any, at); a != std::string::npos) k = std::stoul(m.substr(a + any.size()));
  if (k >= functions.size()) return invalid("`tools`: " + m);
  std::string rest = m.substr(at + marker.size(), colon - at - marker.size());
  return invalid(fmt::format("`tools[{}].function.parameters`: schema at {}{}", functions[k].index,
                             rest.empty() ? "/" : rest, m.substr(colon)));
}

// Keyed by the whole answer's schema (the offered tools in the client's key order and the shape).
Result<GrammarHandle> generic_grammar(const std::vector<ToolFunction>& functions, const GenericToolShape& shape,
                                      const GrammarLimits& limits, GrammarCache* cache) {
  const OrderedJson schema = generic_tool_schema(functions, shape);
  auto grammar = cached_grammar(cache, grammar_cache_key("generic_tools", schema.dump(), limits),
                                [&] { return grammar_from_json_schema(schema, limits); });
  if (!grammar.ok() && grammar.error().code != ErrorCode::kInvalidArgument) return grammar.error().with_context("`tools`");
  if (!grammar.ok()) return generic_schema_error(grammar.error(), functions);
  return grammar;
}

// Keyed by the call syntax and each forced function's name and parameters (JSON text, client's key order).
Result<GrammarHandle> forced_call_grammar(ToolFormat format, const std::vector<ToolFunction>& functions,
                                          const GrammarLimits& limits, GrammarCache* cache) {
  std::string source = tool_format_name(format);
  for (const ToolFunction& fn : functions) {
    source += '\n';
    source += nlohmann::json(fn.name).dump();
    source += ':';
    source += fn.parameters.dump();
  }
  return cached_grammar(cache, grammar_cache_key("tool_call", source, limits),
                        [&] { return tool_call_grammar(format, functions, limits); });
}

}  // namespace

OrderedJson tools_in_order(std::string_view body_text) {
  const OrderedJson::parser_callback_t keep_tools = [](int depth, OrderedJson::parse_event_t event, OrderedJson& parsed) {
    if (event == OrderedJson::parse_event_t::key && depth == 1) return parsed == "tools";
    return true;
  };
  OrderedJson body = OrderedJson::parse(body_text, keep_tools, false);
  if (!body.is_object() || !body.contains("tools")) return OrderedJson();
  return std::move(body["tools"]);
}

Result<ToolRequest> read_tools(const FieldReader& f, std::string_view body_text, ToolFormat format,
                               const ToolLimits& limits, const GrammarLimits& grammar_limits,
                               bool response_format_grammar, GrammarCache* cache) {
  for (const char* key : {"functions", "function_call"}) {
    if (f.raw(key)) return invalid(std::string("`") + key + "` (deprecated by OpenAI) is not supported; send `tools` and `tool_choice`");
  }
  const json* parallel = f.raw("parallel_tool_calls");
  if (parallel && !parallel->is_null() && !parallel->is_boolean()) {
    return invalid(std::string("`parallel_tool_calls` must be a boolean, got ") + json_type_name(*parallel));
  }
  ToolRequest out;
  out.parallel = !parallel || !parallel->is_boolean() || parallel->get<bool>();
  std::string named;
  const json* list = f.raw("tools");
  PLIMSOLL_ASSIGN(ToolChoice choice, read_choice(f.raw("tool_choice"), &named));
  if (list) {
    // Bounded first (count, bytes as JSON): only then is the list read again in order.
    if (list->is_array() && static_cast<int64_t>(list->size()) <= limits.max_tools &&
        static_cast<int64_t>(list->dump().size()) <= limits.max_tools_bytes) {
      out.tools = tools_in_order(body_text);
    }
    PLIMSOLL_ASSIGN(out.functions, read_functions(*list, out.tools, limits));
  }
  if (out.functions.empty()) {
    if (choice == ToolChoice::kRequired || choice == ToolChoice::kNamed) {
      return invalid("`tool_choice` \"required\" or a named function needs a non-empty `tools` list");
    }
    return out;  // no tools: nothing rendered, nothing parsed
  }
  if (choice == ToolChoice::kNone) return ToolRequest{};  // nothing rendered (out.tools dropped)
  if (format == ToolFormat::kNone) format = ToolFormat::kGeneric;  // no syntax of its own: generic_tools.h
  out.choice = choice;
  out.format = format;
  if (choice == ToolChoice::kNamed) {
    const auto it = std::find_if(out.functions.begin(), out.functions.end(),
                                 [&](const ToolFunction& fn) { return fn.name == named; });
    if (it == out.functions.end()) {
      return invalid("`tool_choice.function.name` \"" + named.substr(0, 64) + "\" is not a function in `tools`");
    }
  }
  if (format == ToolFormat::kGeneric) {
    // Every answer is constrained (calls or a reply), so it cannot share a response_format grammar.
    if (response_format_grammar) {
      return invalid("`response_format` cannot be combined with `tools` on this model (its chat template has no "
                     "tool-call syntax, so tool calling constrains the whole answer); send one or the other");
    }
    std::vector<ToolFunction> offered;
    for (const ToolFunction& fn : out.functions) {
      if (choice != ToolChoice::kNamed || fn.name == named) offered.push_back(fn);
    }
    // A named function is called once (as OpenAI does, and as the native formats' forced call).
    const GenericToolShape shape{choice == ToolChoice::kAuto, out.parallel && choice != ToolChoice::kNamed};
    PLIMSOLL_ASSIGN(out.grammar, generic_grammar(offered, shape, grammar_limits, cache));
  } else if (choice == ToolChoice::kRequired || choice == ToolChoice::kNamed) {
    std::vector<ToolFunction> forced;
    for (const ToolFunction& fn : out.functions) {
      if (choice == ToolChoice::kRequired || fn.name == named) forced.push_back(fn);
    }
    // Refused before compiling: a request's preparation holds one grammar at a time.
    if (response_format_grammar) {
      return invalid("`response_format` cannot be combined with `tool_choice` \"required\" or a named function");
    }
    PLIMSOLL_ASSIGN(out.grammar, forced_call_grammar(format, forced, grammar_limits, cache));
  }
  return out;
}

int64_t tools_tree_bytes(const FieldReader& f, const ToolLimits& limits) {
  const json* list = f.raw("tools");
  if (!list) return 0;
  return json_tree_limit_bytes(std::min(static_cast<int64_t>(list->dump().size()), limits.max_tools_bytes));
}

}  // namespace plimsoll::api
