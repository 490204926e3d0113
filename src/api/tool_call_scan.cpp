// Calls in a partial answer (tool_call_scan.h): a small JSON walker that
// tolerates an unfinished end.
#include "api/tool_call_scan.h"

#include <nlohmann/json.hpp>

namespace plimsoll::api {
namespace {

constexpr size_t kOpen = std::string_view::npos;  // "not closed in the text so far"

bool blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_blank(std::string_view t, size_t at) {
  while (at < t.size() && blank(t[at])) ++at;
  return at;
}

// One past the string opening at `at` ('"'); kOpen when it does not close.
size_t string_end(std::string_view t, size_t at) {
  for (size_t i = at + 1; i < t.size(); ++i) {
    if (t[i] == '\\') ++i;
    else if (t[i] == '"') return i + 1;
  }
  return kOpen;
}

// One past the JSON value starting at `at`; kOpen when it does not end in
// the text (a number at the very end counts as open: it may go on).
size_t value_end(std::string_view t, size_t at) {
  if (at >= t.size()) return kOpen;
  if (t[at] == '"') return string_end(t, at);
  if (t[at] == '{' || t[at] == '[') {
    int64_t depth = 0;
    for (size_t i = at; i < t.size(); ++i) {
      const char c = t[i];
      if (c == '"') {
        const size_t e = string_end(t, i);
        if (e == kOpen) return kOpen;
        i = e - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return kOpen;
  }
  size_t i = at;
  while (i < t.size() && !blank(t[i]) && t[i] != ',' && t[i] != '}' && t[i] != ']') ++i;
  return i == t.size() ? kOpen : i;
}

// The call object opening at `at` ('{'): its name and arguments so far.
// Returns one past its '}', or kOpen while it is unfinished (or malformed:
// then nothing more is scanned).
size_t scan_call(std::string_view t, size_t at, CallProgress* call) {
  size_t i = at + 1;
  while (true) {
    i = skip_blank(t, i);
    if (i >= t.size()) return kOpen;
    if (t[i] == '}') return i + 1;
    if (t[i] == ',') {
      ++i;
      continue;
    }
    if (t[i] != '"') return kOpen;
    const size_t key_end = string_end(t, i);
    if (key_end == kOpen) return kOpen;
    const auto key = nlohmann::json::parse(t.substr(i, key_end - i), nullptr, false);
    i = skip_blank(t, key_end);
    if (i >= t.size() || t[i] != ':') return kOpen;
    i = skip_blank(t, i + 1);
    if (i >= t.size()) return kOpen;
    const size_t end = value_end(t, i);
    const bool is_args = key == "arguments" || key == "parameters";
    if (is_args && call->args_begin == kOpen) {
      call->args_begin = i;
      call->args_end = end == kOpen ? t.size() : end;
      call->args_done = end != kOpen;
    }
    if (end == kOpen) return kOpen;
    if (key == "name" && t[i] == '"') {
      const auto name = nlohmann::json::parse(t.substr(i, end - i), nullptr, false);
      if (name.is_string()) {
        call->name = name.get<std::string>();
        call->has_name = true;
      }
    }
    i = end;
  }
}

// Call objects from `at` on, each after optional blanks and `separator`
// (none before the first).
void scan_list(std::string_view t, size_t at, char separator, std::vector<CallProgress>* out) {
  bool first = true;
  while (true) {
    at = skip_blank(t, at);
    if (!first) {
      if (at >= t.size() || t[at] != separator) return;
      at = skip_blank(t, at + 1);
    }
    if (at >= t.size() || t[at] != '{') return;
    out->emplace_back();
    const size_t end = scan_call(t, at, &out->back());
    if (end == kOpen) return;
    at = end;
    first = false;
  }
}

// `{"tool_calls": [` (blanks allowed): where the list's first element may
// start; kOpen when the text does not open that way.
size_t generic_list_start(std::string_view t) {
  size_t i = skip_blank(t, 0);
  if (i >= t.size() || t[i] != '{') return kOpen;
  i = skip_blank(t, i + 1);
  constexpr std::string_view kKey = "\"tool_calls\"";
  if (t.substr(i, kKey.size()) != kKey) return kOpen;
  i = skip_blank(t, i + kKey.size());
  if (i >= t.size() || t[i] != ':') return kOpen;
  i = skip_blank(t, i + 1);
  if (i >= t.size() || t[i] != '[') return kOpen;
  return i + 1;
}

}  // namespace

std::vector<CallProgress> scan_tool_calls(ToolFormat format, std::string_view text) {
  std::vector<CallProgress> out;
  switch (format) {
    case ToolFormat::kHermes: {
      constexpr std::string_view kOpenTag = "<tool_call>";
      // The next tag is looked for after the call (an argument may hold "<tool_call>").
      for (size_t at = text.find(kOpenTag); at != std::string_view::npos;) {
        const size_t start = skip_blank(text, at + kOpenTag.size());
        if (start >= text.size() || text[start] != '{') break;
        out.emplace_back();
        const size_t end = scan_call(text, start, &out.back());
        if (end == kOpen) break;
        at = text.find(kOpenTag, end);
      }
      break;
    }
    case ToolFormat::kMistral: {
      constexpr std::string_view kMarker = "[TOOL_CALLS]";
      const size_t at = text.find(kMarker);
      if (at == std::string_view::npos) break;
      const size_t open = skip_blank(text, at + kMarker.size());
      if (open < text.size() && text[open] == '[') scan_list(text, open + 1, ',', &out);
      break;
    }
    case ToolFormat::kLlama3Json: {
      constexpr std::string_view kTag = "<|python_tag|>";
      size_t at = skip_blank(text, 0);
      if (text.substr(at, kTag.size()) == kTag) at += kTag.size();
      scan_list(text, at, ';', &out);
      break;
    }
    case ToolFormat::kGeneric: {
      const size_t at = generic_list_start(text);
      if (at != kOpen) scan_list(text, at, ',', &out);
      break;
    }
    case ToolFormat::kNone: break;
  }
  return out;
}

std::optional<std::string> generic_reply_so_far(std::string_view t) {
  size_t i = skip_blank(t, 0);
  if (i >= t.size() || t[i] != '{') return std::nullopt;
  i = skip_blank(t, i + 1);
  constexpr std::string_view kKey = "\"response\"";
  if (t.substr(i, kKey.size()) != kKey) return std::nullopt;
  i = skip_blank(t, i + kKey.size());
  if (i >= t.size() || t[i] != ':') return std::nullopt;
  i = skip_blank(t, i + 1);
  if (i >= t.size() || t[i] != '"') return std::nullopt;
  const size_t open = i;
  // Up to the closing quote, or the last point where no escape is cut (a
  // high surrogate escape waits for its low half).
  size_t whole = open + 1;
  for (size_t j = open + 1; j < t.size();) {
    if (t[j] == '"') {
      whole = j;
      break;
    }
    if (t[j] != '\\') {
      whole = ++j;
      continue;
    }
    if (j + 1 >= t.size()) break;
    size_t len = t[j + 1] == 'u' ? 6 : 2;
    if (len == 6 && j + 5 < t.size() && (t[j + 2] == 'd' || t[j + 2] == 'D') &&
        std::string_view("89abAB").find(t[j + 3]) != std::string_view::npos) {
      len = 12;  // a high surrogate: with the escape of its low half
    }
    if (j + len > t.size()) break;
    whole = j += len;
  }
  std::string quoted(t.substr(open, whole - open));
  quoted += '"';
  const auto decoded = nlohmann::json::parse(quoted, nullptr, false);
  if (!decoded.is_string()) return std::nullopt;
  return decoded.get<std::string>();
}

void use_written_arguments(ToolFormat format, std::string_view text, std::vector<ToolCall>* calls) {
  const std::vector<CallProgress> found = scan_tool_calls(format, text);
  for (size_t k = 0; k < calls->size() && k < found.size(); ++k) {
    const CallProgress& p = found[k];
    if (!p.has_name || p.name != (*calls)[k].name || !p.args_done) continue;
    (*calls)[k].arguments = std::string(text.substr(p.args_begin, p.args_end - p.args_begin));
  }
}

}  // namespace plimsoll::api
