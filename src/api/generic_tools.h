// Tool calling for a model whose chat template has no tool-call syntax
// (ToolFormat::kGeneric), after llama.cpp's generic format: the tools are
// described in a system message and the output is constrained to one JSON
// object, either calls or a reply:
//   {"tool_calls": [{"name": "get_weather", "parameters": {"city": "Paris"}}]}
//   {"response": "Hello!"}
// The call's arguments key is Llama 3's "parameters" (llama.cpp writes
// "arguments"): the grammar writes an object's properties in alphabetical
// order, and "name" < "parameters" lets a stream send the name before the
// arguments as they are generated. "arguments" is read too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/chat_prompt.h"
#include "api/tool_calls.h"
#include "engine/grammar/grammar.h"

namespace plimsoll::api {

// What the generic output may be.
struct GenericToolShape {
  bool may_respond = true;  // tool_choice "auto": a {"response": ...} reply is allowed
  bool parallel = true;     // parallel_tool_calls: one or more calls (false: exactly one)
};

// The JSON schema of the output: calls to `functions` (each name with its
// parameters), or, when shape.may_respond, a reply.
nlohmann::ordered_json generic_tool_schema(const std::vector<ToolFunction>& functions, const GenericToolShape& shape);

// The conversation as a template without tool syntax can take it: the tools
// and the expected output described in a system message (appended to the
// first message when it is a system message, else a new first message);
// earlier assistant calls written as their {"tool_calls": [...]} JSON, tool
// results as user messages {"tool_response": {"tool_call_id", "content"}}.
void add_generic_tools(const OrderedJson& tools, const GenericToolShape& shape, std::vector<ChatMessage>* messages);

// For a template that refuses a system message: the first message's system
// text moved to the start of the user message after it. False (nothing
// changed) when the conversation does not open with system then user.
bool fold_system_into_user(std::vector<ChatMessage>* messages);

// {"tool_calls": [...]} (or llama.cpp's {"tool_call": {...}}) -> calls;
// {"response": "..."} -> content (a non-string reply as its JSON text);
// anything else: the text whole, as content.
ParsedAnswer parse_generic_answer(const std::string& text);

}  // namespace plimsoll::api
