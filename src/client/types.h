// The plain data the client sends and receives: generation parameters (TGI and
// OpenAI), one generation, a streamed token, the server's /info and client options.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace plimsoll::client {

// TGI `parameters`. Unset fields are not sent (the server's defaults apply);
// `extra` holds any other parameter and is sent as is, winning over the fields.
struct GenerateParams {
  std::optional<int64_t> max_new_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<int64_t> seed;
  std::optional<bool> do_sample;
  std::vector<std::string> stop;
  bool details = false;  // ask for finish_reason and generated_tokens
  nlohmann::json extra = nlohmann::json::object();
};

// OpenAI /v1/completions and /v1/chat/completions fields besides prompt/messages.
struct OpenAiParams {
  std::string model;  // empty: not sent (Plimsoll serves one model)
  std::optional<int64_t> max_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> seed;
  std::vector<std::string> stop;
  nlohmann::json extra = nlohmann::json::object();
};

struct ChatMessage {
  std::string role;  // system, user, assistant
  std::string content;
};

struct Generation {
  std::string text;
  std::optional<int64_t> generated_tokens;  // known with details, usage or a stream
  std::string finish_reason;                // "" when the server did not say
};

// A batch answered by one request (list inputs): one Generation per item, in order.
struct GenerationList {
  std::vector<Generation> items;
  int64_t generated_tokens = 0;  // x-generated-tokens or usage, else the sum over items
};

struct StreamToken {
  int64_t id = -1;
  std::string text;
  bool special = false;
};

// GET /info: the limits a client plans with (0 = the server did not say).
struct ServerInfo {
  std::string model_id;
  int64_t max_input_tokens = 0;
  int64_t max_total_tokens = 0;
  int64_t max_batch_total_tokens = 0;
  int64_t max_concurrent_requests = 0;
  int64_t max_queued_tokens = 0;
  int64_t max_client_batch_size = 0;   // items per request; 0 = unlimited
  int64_t safe_client_batch_size = 0;  // items that run at once at max_total_tokens each
  nlohmann::json raw;                  // the whole /info object
};

struct ClientOptions {
  int64_t connect_timeout_ms = 5'000;
  int64_t read_timeout_ms = 600'000;  // a long generation is silent until it ends
  int64_t write_timeout_ms = 60'000;
  std::string api_key;                // sent as "Authorization: Bearer <key>" when set
};

}  // namespace plimsoll::client
