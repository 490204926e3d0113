// OpenAI request parsing: /v1/completions and /v1/chat/completions bodies
// into validated GenerationRequests (prompts x best_of), with 422s (sent as
// OpenAI's 400) that name the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/route_context.h"
#include "api/tool_calls.h"
#include "api/validation.h"

namespace plimsoll::api {

struct OpenAiCall {
  bool chat = false;
  // completions: as given (token prompts: their text, for echo); chat: the
  // rendered conversation. Kept for echo only (emptied otherwise).
  std::vector<std::string> prompts;
  std::vector<std::vector<int32_t>> prompt_ids;  // completions given token ids (emptied once items are built)
  int64_t n = 1;                     // choices per prompt: choice index = prompt * n + j
  int64_t best_of = 1;               // items generated per prompt (>= n): item index = prompt * best_of + k
  bool stream = false;
  int32_t priority = 0;              // vLLM's `priority` (lower first, within a tenant)
  bool include_usage = false;        // stream_options.include_usage
  bool echo = false;                 // completions: prepend the prompt (with logprobs: the prompt's too)
  bool include_stop = false;         // include_stop_str_in_output (vLLM): keep a matched stop sequence
  bool logprobs = false;
  int32_t top_logprobs = 0;
  SamplingParams sampling;
  const char* max_field = "max_tokens";  // the length field the client sent, for errors (chat: or max_completion_tokens)
  ToolFormat tool_calls = ToolFormat::kNone;  // chat with tools: answers are parsed for calls in this syntax
  bool parallel_tool_calls = true;            // false: an answer carries its first call only
  std::vector<sched::GenerationRequest> items;  // moved into the submission
  size_t item_count = 0;             // items.size() before the move
  int64_t prompt_tokens = 0;         // each prompt's tokens once, however many choices
  sched::ByteReservation build_hold; // the prompts' tokenization, until the items are submitted
};

Result<OpenAiCall> parse_completion_call(RouteContext& ctx, const json& body, std::string_view body_text);
// `body_text`: the body `body` was parsed from (tools are read from it in document order).
Result<OpenAiCall> parse_chat_call(RouteContext& ctx, const json& body, std::string_view body_text);

}  // namespace plimsoll::api
