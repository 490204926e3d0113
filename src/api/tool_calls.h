// Tool calls in a model's own syntax: which syntax a chat template uses (by
// its markers), the grammar that makes a random-weight model write a
// well-formed call, and the parser that turns generated text back into
// OpenAI's tool_calls. Families: Hermes / Qwen2.5 (`<tool_call>{...}</tool_call>`),
// Llama 3.x (a bare `{"name": ..., "parameters": {...}}`), Mistral
// (`[TOOL_CALLS][{"name": ..., "arguments": {...}}]`).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/grammar/grammar.h"

namespace plimsoll::api {

// kGeneric: a template without tool syntax; the server's own JSON format (generic_tools.h).
enum class ToolFormat { kNone, kHermes, kLlama3Json, kMistral, kGeneric };

// The family of a chat template's source: "<tool_call>" is Hermes/Qwen,
// "[TOOL_CALLS]" Mistral, Llama 3's headers with the ipython role Llama 3 JSON;
// kNone when it shows no tool-call syntax.
ToolFormat detect_tool_format(std::string_view template_source);
const char* tool_format_name(ToolFormat format);

struct ToolCall {
  std::string id;         // "call_..." (Mistral: 9 alphanumerics, as its template requires)
  std::string name;
  std::string arguments;  // a JSON object as compact text
};

struct ParsedAnswer {
  std::string content;          // the text before the calls (all of it when there are none)
  std::vector<ToolCall> calls;  // empty: the text is plain content
};

// Splits generated text into content and calls. Text whose call syntax does
// not parse (a cut-off call, a wrong shape) stays content, whole.
ParsedAnswer parse_tool_calls(ToolFormat format, const std::string& text);

// Where a call begins or may still begin in `text` (a stream holds back the
// text from there): the first marker, a trailing prefix of it, or, for Llama
// 3 (calls are the whole answer), 0 while the text is blank or opens with `{`
// or <|python_tag|>. text.size() when no call can begin in it.
size_t tool_call_hold_from(ToolFormat format, std::string_view text);

// A function's name and its parameters' schema (read from the request).
struct ToolFunction {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON schema of an object, in the client's key order
  size_t index = 0;           // its place in the request's `tools`, for errors
};

// Output: exactly one call, in the family's syntax, of one of `functions`,
// its arguments valid under that function's parameters schema. Errors name
// the function's field (`tools[i].function.parameters`).
Result<std::shared_ptr<const Grammar>> tool_call_grammar(ToolFormat format, const std::vector<ToolFunction>& functions,
                                                         const GrammarLimits& limits);

// A fresh call id for the family.
std::string new_tool_call_id(ToolFormat format);

}  // namespace plimsoll::api
