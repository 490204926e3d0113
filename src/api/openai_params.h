// OpenAI request parsing: /v1/completions and /v1/chat/completions bodies
// into validated GenerationRequests (prompts x n), with TGI-style 422s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/route_context.h"
#include "api/validation.h"

namespace plimsoll::api {

struct OpenAiCall {
  bool chat = false;
  std::vector<std::string> prompts;  // completions: as given; chat: the rendered conversation (kept for echo only)
  int64_t n = 1;                     // choices per prompt: item index = prompt * n + choice
  bool stream = false;
  bool include_usage = false;        // stream_options.include_usage
  bool echo = false;                 // completions: prepend the prompt
  bool logprobs = false;
  int32_t top_logprobs = 0;
  SamplingParams sampling;
  std::vector<sched::GenerationRequest> items;  // moved into the submission
  size_t item_count = 0;             // items.size() before the move
  int64_t prompt_tokens = 0;         // each prompt's tokens once, however many choices
  sched::ByteReservation build_hold; // the prompts' tokenization, until the items are submitted
};

Result<OpenAiCall> parse_completion_call(RouteContext& ctx, const json& body);
Result<OpenAiCall> parse_chat_call(RouteContext& ctx, const json& body);

}  // namespace plimsoll::api
