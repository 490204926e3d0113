// ApiConfig: how the HTTP layer listens and what it allows (payload size,
// API key, timeouts, worker threads, defaults the wire formats leave open).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/generation_defaults.h"

namespace plimsoll::api {

struct ApiConfig {
  std::string hostname = "0.0.0.0";
  int port = 3000;                              // 0: an ephemeral port (see ApiServer::port())
  int64_t payload_limit_bytes = 2'000'000;      // TGI's default payload_limit
  std::string api_key;                          // "": no auth; else `Authorization: Bearer <key>`
  // Tenants (--tenants; sched/tenants_file.h): names in the scheduler's order (the
  // default first), and the SHA-256 (hex) of each tenant's API keys, which are
  // accepted keys too. A request's tenant: its key's, else with
  // trust_tenant_header its X-Tenant header's, else the default (index 0).
  std::vector<std::string> tenant_names;
  // Their weights, in the same order (api/tenant_shares.h: the HTTP workers,
  // preparation pool, body budget and busy connections are shared by them).
  std::vector<double> tenant_weights;
  std::vector<std::pair<std::string, int32_t>> tenant_key_sha256;
  bool trust_tenant_header = false;
  // Transport limits (src/api/http_session.cpp; docs/reliability.md lists them):
  int read_timeout_seconds = 30;                // one deadline for a request's head + body (not per read): then closed
  int write_timeout_seconds = 30;               // each response write (an SSE frame batch): then closed
  int64_t max_header_bytes = 16 * 1024;         // request line + header fields: 431
  int max_header_fields = 100;                  // header fields per request: 431
  int max_connections = 256;                    // open connections; at the cap the oldest still reading its request is dropped
  int64_t max_body_bytes_in_flight = 0;         // bodies being read/parsed, x(1+32) each (body_budget.h); 0: auto; full: 429
  int64_t stream_queue_bytes = 64 * 1024;       // events waiting for one stream's reader; over it the stream is cancelled
  int io_threads = 2;                           // threads reading and writing sockets (Asio)
  int threads = 256;                            // handler workers (a non-streamed generation holds one until it ends)
  // The preparation stage (api/prep_pool.h): body parse, validation, template,
  // tokenization, grammar compile and submission, off the handler workers.
  int prep_threads = 2;                         // preparations running at once
  int max_concurrent_compiles = 1;              // grammar compiles at once, each reserving prep_workspace_bytes() of request memory
  int prep_queue = 256;                         // preparations waiting for a thread; beyond: 429
  int prep_timeout_ms = 10000;                  // a preparation's deadline, waiting included
  std::string model_id;                         // "": ServiceLimits::model_id
  std::string cors_allow_origin;                // "": no CORS; "*" or origins separated by commas (api/cors.h)
  int64_t default_max_new_tokens = 100;         // TGI and chat routes, when the client gives none
  int64_t default_completion_max_tokens = 16;   // /v1/completions (OpenAI's default)
  int64_t max_n = 128;                          // OpenAI `n` (choices per prompt)
  int sse_keepalive_ms = 5000;                  // SSE comment while no token arrives
  // The model's generation_config.json: sampling fields and max_new_tokens /
  // max_length for what a request leaves out (see apply_generation_defaults).
  GenerationDefaults generation_defaults;
};

}  // namespace plimsoll::api
