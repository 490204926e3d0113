// OpenAI's `tools` and `tool_choice` on /v1/chat/completions: validated
// under bounds (count, bytes, schema nesting; 400s name the field and the
// limit), the list kept in the client's key order for the chat template, and
// for `required` or a named function the grammar that forces one call.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_reader.h"
#include "api/tool_calls.h"
#include "chat/chat_template.h"
#include "engine/grammar/grammar_cache.h"

namespace plimsoll::api {

struct ToolLimits {
  int64_t max_tools = 128;             // OpenAI's own bound
  int64_t max_tools_bytes = 65536;     // the list as JSON text (= the grammar's source bound)
  int64_t max_schema_depth = 16;       // nesting of one function's parameters
};

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ToolRequest {
  ToolChoice choice = ToolChoice::kNone;  // kNone also when no tools were given
  ToolFormat format = ToolFormat::kNone;  // the template's call syntax (set when choice != kNone)
  OrderedJson tools;                      // in the client's key order (tools_in_order), for the template
  std::vector<ToolFunction> functions;
  GrammarHandle grammar;                  // required / named: one well-formed call; generic: every answer
  bool parallel = true;                   // parallel_tool_calls (generic format: false = exactly one call)
  bool parses_calls() const { return choice != ToolChoice::kNone; }
};

// Reads `tools`, `tool_choice` and `parallel_tool_calls` (native formats: a
// forced call is one call). `format` is the chat
// template's family; a template with none gets the generic format
// (generic_tools.h: its grammar constrains every answer). tool_choice "none":
// tools are not rendered and nothing is parsed, as vLLM and TGI do.
// `response_format_grammar`: the request's response_format already compiled
// a grammar, so a forced call (which needs its own) is refused before compiling.
// `body_text`: the body's text, from which the list is read again in the
// client's key order (tools_in_order; empty: the tree's sorted order); the
// caller reserves what that tree may take first (tools_tree_bytes).
// `cache`: the server's grammars (the same tools and choice are compiled once;
// null: compiled privately).
Result<ToolRequest> read_tools(const FieldReader& f, std::string_view body_text, ToolFormat format,
                               const ToolLimits& limits, const GrammarLimits& grammar_limits,
                               bool response_format_grammar = false, GrammarCache* cache = nullptr);
// What reading `tools` again in order may hold: the tree bound of its JSON
// text, up to limits.max_tools_bytes (a longer list is refused unread); 0 without tools.
int64_t tools_tree_bytes(const FieldReader& f, const ToolLimits& limits);

// The top-level `tools` of a request body, read again from its text in
// document order (transformers renders a tool's keys in the client's order;
// the request tree sorts them); only that member is built, at most
// tools_tree_bytes, which the caller reserves first.
OrderedJson tools_in_order(std::string_view body_text);

}  // namespace plimsoll::api
