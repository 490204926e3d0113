// Tool calls as they are being generated: where each call's name and
// arguments are in the text so far, so a stream can send a call's name as
// soon as it is known and its arguments as they grow (OpenAI's deltas),
// rather than all at the end.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_calls.h"

namespace plimsoll::api {

struct CallProgress {
  std::string name;          // set once the name's string is closed
  bool has_name = false;
  size_t args_begin = std::string_view::npos;  // where the arguments' JSON text starts (npos: not yet)
  size_t args_end = 0;       // how far it goes so far (the text's end while it is open)
  bool args_done = false;    // the arguments' value is closed
};

// The calls begun in `text` (an answer from where tool_call_hold_from put
// its hold), in order, the last possibly unfinished: Hermes `<tool_call>`
// blocks, Mistral's `[TOOL_CALLS][...]` list, Llama 3's objects (separated by
// `;`), the generic `{"tool_calls": [...]}`. A call's arguments are its
// "arguments" (or "parameters") member. Empty when no call has begun.
std::vector<CallProgress> scan_tool_calls(ToolFormat format, std::string_view text);

// The generic format's reply so far: when `text` opens as {"response": "...,
// the string's text decoded as far as its escapes are whole (up to its
// closing quote); nullopt otherwise. A stream sends it as content as it grows.
std::optional<std::string> generic_reply_so_far(std::string_view text);

// Gives `calls` (parsed from `text`) their arguments as the model wrote them
// (OpenAI's `arguments` is the model's text; a stream sends it as it comes,
// so the answer whole says the same), where the scan finds each call whole
// under the same name; others keep their compact JSON.
void use_written_arguments(ToolFormat format, std::string_view text, std::vector<ToolCall>* calls);

}  // namespace plimsoll::api
