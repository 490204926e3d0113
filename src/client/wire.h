// The wire formats: TGI and OpenAI request bodies, their answers and error
// bodies, /info and stream events. The JSON edge: parse exceptions stop here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client_error.h"
#include "client/types.h"

namespace plimsoll::client::wire {

// The parts of an HTTP answer the client reads.
struct HttpReply {
  int status = 0;
  std::string body;
  std::string retry_after;       // Retry-After header, "" when absent
  std::string generated_tokens;  // x-generated-tokens header, "" when absent
};

nlohmann::json tgi_parameters(const GenerateParams& params);
nlohmann::json openai_fields(const OpenAiParams& params);
// {"inputs": "..." | [...], "parameters": {...}}
std::string generate_body(const std::vector<std::string>& inputs, bool as_list, const GenerateParams& params);
std::string completions_body(const std::vector<std::string>& prompts, bool as_list, const OpenAiParams& params);
std::string chat_body(const std::vector<ChatMessage>& messages, const OpenAiParams& params);

// Seconds from a Retry-After header (delta-seconds; an HTTP date reads as 0).
double parse_retry_after_seconds(const std::string& header);
// The typed error for a non-2xx answer (TGI or OpenAI error bodies, or plain text).
ClientError error_from_reply(const HttpReply& reply);

ClientResult<GenerationList> parse_generate(const HttpReply& reply, size_t items, bool as_list);
ClientResult<GenerationList> parse_completions(const HttpReply& reply, size_t items);
ClientResult<Generation> parse_chat(const HttpReply& reply);
ClientResult<ServerInfo> parse_info(const HttpReply& reply);

// One TGI /generate_stream event (the data of one SSE frame).
struct StreamEvent {
  std::optional<StreamToken> token;
  std::optional<Generation> final;  // set by the last event
  std::optional<ClientError> error;  // an error frame
};
ClientResult<StreamEvent> parse_stream_event(std::string_view data);

}  // namespace plimsoll::client::wire
