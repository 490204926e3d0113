// ApiConfig: how the HTTP layer listens and what it allows (payload size,
// API key, timeouts, worker threads, defaults the wire formats leave open).
#pragma once

#include <cstdint>
#include <string>

#include "formats/hf_settings.h"

namespace plimsoll::api {

struct ApiConfig {
  std::string hostname = "0.0.0.0";
  int port = 3000;                              // 0: an ephemeral port (see ApiServer::port())
  int64_t payload_limit_bytes = 2'000'000;      // TGI's default payload_limit
  std::string api_key;                          // "": no auth; else `Authorization: Bearer <key>`
  int read_timeout_seconds = 30;
  int write_timeout_seconds = 30;
  int threads = 256;                            // one per open connection (streams hold one each)
  std::string model_id;                         // "": ServiceLimits::model_id
  int64_t default_max_new_tokens = 100;         // TGI and chat routes, when the client gives none
  int64_t default_completion_max_tokens = 16;   // /v1/completions (OpenAI's default)
  int64_t max_n = 128;                          // OpenAI `n` (choices per prompt)
  int sse_keepalive_ms = 5000;                  // SSE comment while no token arrives
  // The model's generation_config.json: sampling fields and max_new_tokens /
  // max_length for what a request leaves out (see apply_generation_defaults).
  GenerationDefaults generation_defaults;
};

}  // namespace plimsoll::api
