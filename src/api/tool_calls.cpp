// Tool-call syntax per template family (tool_calls.h).
#include "api/tool_calls.h"

#include <algorithm>
#include <optional>
#include <random>

#include "api/generic_tools.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll::api {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// `value` is {"name": <string>, <args_key>: <object>} (Llama 3 also writes
// "arguments"); nullopt otherwise.
std::optional<ToolCall> call_from(const ordered_json& value, ToolFormat format) {
  if (!value.is_object()) return std::nullopt;
  const auto name = value.find("name");
  if (name == value.end() || !name->is_string() || name->get_ref<const std::string&>().empty()) return std::nullopt;
  auto args = value.find("arguments");
  if (args == value.end() && format == ToolFormat::kLlama3Json) args = value.find("parameters");
  if (args == value.end() || !args->is_object()) return std::nullopt;
  return ToolCall{new_tool_call_id(format), name->get<std::string>(),
                  args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

ordered_json parse_or_discarded(std::string_view text) { return ordered_json::parse(text, nullptr, false); }

size_t skip_blank(std::string_view text, size_t at) {
  while (at < text.size() && blank(text[at])) ++at;
  return at;
}

// Where the JSON object opening at `open` ends (one past its '}'), strings and
// their escapes skipped (an argument may hold "</tool_call>" or ';'); npos when
// it does not close.
size_t object_end(std::string_view text, size_t open) {
  int64_t depth = 0;
  bool in_string = false;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

// The call whose JSON object opens at `at` (after blanks); `*end` set past it.
std::optional<ToolCall> call_at(std::string_view text, size_t at, ToolFormat format, size_t* end) {
  at = skip_blank(text, at);
  if (at >= text.size() || text[at] != '{') return std::nullopt;
  *end = object_end(text, at);
  if (*end == std::string_view::npos) return std::nullopt;
  return call_from(parse_or_discarded(text.substr(at, *end - at)), format);
}

bool starts_at(std::string_view text, size_t at, std::string_view marker) {
  return text.substr(at, marker.size()) == marker;
}

// <tool_call>{...}</tool_call>, repeated with blanks between; the last close
// tag may be missing (the answer ended with EOS right after the JSON).
ParsedAnswer parse_hermes(const std::string& text) {
  const size_t first = text.find(kHermesOpen);
  if (first == std::string::npos) return {text, {}};
  ParsedAnswer out;
  size_t at = first;
  while (true) {
    size_t end = 0;
    auto call = call_at(text, at + kHermesOpen.size(), ToolFormat::kHermes, &end);
    if (!call) return {text, {}};
    out.calls.push_back(std::move(*call));
    at = skip_blank(text, end);
    if (at == text.size()) break;
    if (!starts_at(text, at, kHermesClose)) return {text, {}};
    at = skip_blank(text, at + kHermesClose.size());
    if (at == text.size()) break;
    if (!starts_at(text, at, kHermesOpen)) return {text, {}};  // words after the calls: not a call answer
  }
  out.content = std::string(trim(std::string_view(text).substr(0, first)));
  return out;
}

// One object, or several separated by ';' (vLLM's llama3_json parser reads both).
ParsedAnswer parse_llama3(const std::string& text) {
  size_t at = skip_blank(text, 0);
  if (starts_at(text, at, kPythonTag)) at += kPythonTag.size();
  ParsedAnswer out;
  while (true) {
    size_t end = 0;
    auto call = call_at(text, at, ToolFormat::kLlama3Json, &end);
    if (!call) return {text, {}};
    out.calls.push_back(std::move(*call));
    at = skip_blank(text, end);
    if (at == text.size()) break;
    if (text[at] != ';') return {text, {}};
    ++at;
  }
  return out;
}

ParsedAnswer parse_mistral(const std::string& text) {
  const size_t at = text.find(kMistralMarker);
  if (at == std::string::npos) return {text, {}};
  const ordered_json list = parse_or_discarded(trim(std::string_view(text).substr(at + kMistralMarker.size())));
  if (!list.is_array() || list.empty()) return {text, {}};
  ParsedAnswer out;
  for (const ordered_json& item : list) {
    auto call = call_from(item, ToolFormat::kMistral);
    if (!call) return {text, {}};
    out.calls.push_back(std::move(*call));
  }
  out.content = std::string(trim(std::string_view(text).substr(0, at)));
  return out;
}

// The first place `marker` starts in `text`, or where a trailing prefix of it
// starts; text.size() when neither.
size_t marker_hold_from(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  if (at != std::string_view::npos) return at;
  for (size_t len = std::min(marker.size() - 1, text.size()); len > 0; --len) {
    if (text.substr(text.size() - len) == marker.substr(0, len)) return text.size() - len;
  }
  return text.size();
}

}  // namespace

ToolFormat detect_tool_format(std::string_view source) {
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolFormat::kHermes;
  if (source.find(kMistralMarker) != std::string_view::npos) return ToolFormat::kMistral;
  if (source.find("<|start_header_id|>") != std::string_view::npos && source.find("ipython") != std::string_view::npos) {
    return ToolFormat::kLlama3Json;
  }
  return ToolFormat::kNone;
}

const char* tool_format_name(ToolFormat format) {
  switch (format) {
    case ToolFormat::kHermes: return "hermes";
    case ToolFormat::kLlama3Json: return "llama3_json";
    case ToolFormat::kMistral: return "mistral";
    case ToolFormat::kGeneric: return "generic";
    case ToolFormat::kNone: break;
  }
  return "none";
}

ParsedAnswer parse_tool_calls(ToolFormat format, const std::string& text) {
  switch (format) {
    case ToolFormat::kHermes: return parse_hermes(text);
    case ToolFormat::kLlama3Json: return parse_llama3(text);
    case ToolFormat::kMistral: return parse_mistral(text);
    case ToolFormat::kGeneric: return parse_generic_answer(text);
    case ToolFormat::kNone: break;
  }
  return {text, {}};
}

size_t tool_call_hold_from(ToolFormat format, std::string_view text) {
  switch (format) {
    case ToolFormat::kHermes: return marker_hold_from(text, kHermesOpen);
    case ToolFormat::kMistral: return marker_hold_from(text, kMistralMarker);
    case ToolFormat::kLlama3Json: {
      const std::string_view t = trim(text);
      if (t.empty() || t.front() == '{') return 0;
      const size_t n = std::min(t.size(), kPythonTag.size());
      return t.substr(0, n) == kPythonTag.substr(0, n) ? 0 : text.size();
    }
    case ToolFormat::kGeneric: return 0;  // the whole answer is JSON: its reply is read at the end
    case ToolFormat::kNone: break;
  }
  return text.size();
}

Result<std::shared_ptr<const Grammar>> tool_call_grammar(ToolFormat format, const std::vector<ToolFunction>& functions,
                                                         const GrammarLimits& limits) {
  std::vector<std::vector<GrammarPiece>> alternatives;
  for (const ToolFunction& f : functions) {
    const std::string name = nlohmann::json(f.name).dump();
    std::vector<GrammarPiece> pieces;
    switch (format) {
      case ToolFormat::kHermes:
        pieces = {{"<tool_call>\n{\"name\": " + name + ", \"arguments\": ", nullptr}, {"", &f.parameters},
                  {"}\n</tool_call>", nullptr}};
        break;
      case ToolFormat::kLlama3Json:
        pieces = {{"{\"name\": " + name + ", \"parameters\": ", nullptr}, {"", &f.parameters}, {"}", nullptr}};
        break;
      case ToolFormat::kMistral:
        pieces = {{"[TOOL_CALLS][{\"name\": " + name + ", \"arguments\": ", nullptr}, {"", &f.parameters},
                  {"}]", nullptr}};
        break;
      case ToolFormat::kNone:
      case ToolFormat::kGeneric:  // its grammar is built from generic_tool_schema
        return make_error(ErrorCode::kInvalidArgument, "the chat template has no tool-call syntax");
    }
    alternatives.push_back(std::move(pieces));
  }
  auto grammar = grammar_from_sequences(alternatives, limits);
  if (grammar.ok()) return grammar;
  // "[k]: <what>" names the alternative; name the request's field instead.
  if (grammar.error().code != ErrorCode::kInvalidArgument) return grammar.error().with_context("`tools`");  // 429s stay 429s
  std::string message = grammar.error().message;
  if (message.size() > 1 && message[0] == '[') {
    const size_t close = message.find("]: ");
    const size_t k = close == std::string::npos ? functions.size() : std::stoul(message.substr(1, close - 1));
    if (k < functions.size()) {
      message = "`tools[" + std::to_string(functions[k].index) + "].function.parameters`: " + message.substr(close + 3);
    }
  } else {
    message = "`tools`: " + message;
  }
  return make_error(ErrorCode::kInvalidArgument, message);
}

std::string new_tool_call_id(ToolFormat format) {
  static constexpr char kAlnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = format == ToolFormat::kMistral ? "" : "call_";
  const int n = format == ToolFormat::kMistral ? 9 : 24;
  for (int i = 0; i < n; ++i) id += kAlnum[rng() % (sizeof(kAlnum) - 1)];
  return id;
}

}  // namespace plimsoll::api
