// `plimsoll serve`: flags (each with an environment variable, the container
// convention) for the server; validation, then run_serve().
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/kv_cache_flag.h"
#include "cli/model_reference.h"
#include "core/bytes.h"
#include "server/serve.h"

namespace plimsoll::cli {
namespace {

struct ServeFlags {
  ServeConfig config;
  std::string memory_limit;
  std::string max_batch_memory;
  std::string max_request_memory;
  std::string payload_limit = "2000000";
  std::string memory_high_water = "0.95";
  std::string max_body_bytes_in_flight = "0";
  std::string stream_queue_bytes = "256Ki";
  int64_t max_input_tokens = 0;
  int64_t max_batch_total_tokens = 0;
  int64_t max_queued_tokens = 0;
  HubFlags hub;
};

int run(ServeFlags& f) {
  ServeConfig& c = f.config;
  const std::string given = c.engine.model_path;
  if (!resolve_model_in_place(c.engine.model_path, f.hub)) return 1;
  if (c.api.model_id.empty() && given != c.engine.model_path) c.api.model_id = given;  // the repo id, as TGI reports it
  if (!f.memory_limit.empty()) {
    auto b = parse_bytes(f.memory_limit);
    if (!b) return std::fprintf(stderr, "error: --memory-limit: %s\n", b.error().message.c_str()), 2;
    c.engine.memory_limit_bytes = *b;
  }
  if (!f.max_batch_memory.empty()) {
    auto b = parse_bytes(f.max_batch_memory);
    if (!b) return std::fprintf(stderr, "error: --max-batch-memory: %s\n", b.error().message.c_str()), 2;
    c.engine.max_batch_memory_bytes = *b;
  }
  auto high_water = parse_high_water(f.memory_high_water);
  if (!high_water) return std::fprintf(stderr, "error: %s\n", high_water.error().message.c_str()), 2;
  c.memory_high_water = *high_water;
  if (!f.max_request_memory.empty()) {
    auto b = parse_bytes(f.max_request_memory);
    if (!b) return std::fprintf(stderr, "error: --max-request-memory: %s\n", b.error().message.c_str()), 2;
    c.engine.request_budget_bytes = *b;
  }
  auto payload = parse_bytes(f.payload_limit);
  if (!payload) return std::fprintf(stderr, "error: --payload-limit: %s\n", payload.error().message.c_str()), 2;
  c.api.payload_limit_bytes = *payload;
  auto in_flight = parse_bytes(f.max_body_bytes_in_flight);
  if (!in_flight) return std::fprintf(stderr, "error: --max-body-bytes-in-flight: %s\n", in_flight.error().message.c_str()), 2;
  c.api.max_body_bytes_in_flight = *in_flight;
  auto queue = parse_bytes(f.stream_queue_bytes);
  if (!queue) return std::fprintf(stderr, "error: --stream-queue-bytes: %s\n", queue.error().message.c_str()), 2;
  c.api.stream_queue_bytes = *queue;
  if (f.max_input_tokens > 0) c.max_input_tokens = f.max_input_tokens;
  if (f.max_batch_total_tokens > 0) c.max_batch_total_tokens = f.max_batch_total_tokens;
  if (f.max_queued_tokens > 0) c.max_queued_tokens = f.max_queued_tokens;
  return run_serve(c);
}

}  // namespace

Runner add_serve_command(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  ServeConfig& c = f->config;
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve a model over HTTP (TGI and OpenAI wire formats) within a memory plan");
  auto opt = [&](const std::string& names, auto& value, const std::string& env, const std::string& help) {
    return cmd->add_option(names, value, help)->envname(env)->capture_default_str();
  };
  opt("-m,--model", c.engine.model_path, "MODEL_ID", kModelHelp)->required();
  opt("--revision", f->hub.revision, "REVISION", "With a repo id: the branch, tag or commit (default main)");
  cmd->add_flag("--offline", f->hub.offline, "With a repo id: use only the Hugging Face cache (as HF_HUB_OFFLINE=1)");
  opt("--tokenizer", c.engine.tokenizer_path, "PLIMSOLL_TOKENIZER", "Tokenizer instead of the model's: tokenizer.json, GGUF, or llama2.c tokenizer.bin");
  opt("--hostname", c.api.hostname, "HOSTNAME", "Address to listen on");
  opt("-p,--port", c.api.port, "PORT", "Port to listen on (0: any free port)");
  opt("--memory-limit", f->memory_limit, "PLIMSOLL_MEMORY_LIMIT",
      "Memory limit, e.g. 12Gi (default: the cgroup's limit, v2 or v1, else physical memory)");
  opt("--memory-fraction", c.engine.memory_fraction, "PLIMSOLL_MEMORY_FRACTION", "Share of the limit the plan may use");
  opt("--memory-high-water", f->memory_high_water, "PLIMSOLL_MEMORY_HIGH_WATER",
      "Backstop: from this usage of the limit (a fraction, or a size e.g. 480Mi) new requests get 429 until it falls");
  opt("--max-batch-memory", f->max_batch_memory, "PLIMSOLL_MAX_BATCH_MEMORY",
      "Cap on the KV cache bytes all running sequences may hold, e.g. 4Gi");
  opt("--max-request-memory", f->max_request_memory, "PLIMSOLL_MAX_REQUEST_MEMORY",
      "Request memory in flight (prompts, stops, bookkeeping, responses), e.g. 256Mi; beyond it: 429 "
      "(default: a third of what the plan leaves for KV, up to 64Mi, or 256 B x max-total-tokens x "
      "max-concurrent-requests when more)");
  opt("--max-concurrent-requests", c.engine.max_concurrent_requests, "MAX_CONCURRENT_REQUESTS",
      "Client calls in flight (running + queued); beyond it: 429");
  opt("--max-input-tokens", f->max_input_tokens, "MAX_INPUT_TOKENS", "Prompt tokens per request (default: max-total-tokens - 1)");
  opt("--max-total-tokens", c.engine.max_total_tokens, "MAX_TOTAL_TOKENS",
      "Prompt + new tokens per request (default 0: the model's context)");
  opt("--max-batch-prefill-tokens", c.engine.step_tokens, "MAX_BATCH_PREFILL_TOKENS", "Tokens per engine step");
  opt("--max-batch-total-tokens", f->max_batch_total_tokens, "MAX_BATCH_TOTAL_TOKENS",
      "KV tokens of all running sequences (default 0: what the plan holds; more is refused)");
  opt("--max-batch-size", c.engine.step_seqs, "MAX_BATCH_SIZE", "Sequences per engine step");
  opt("--max-queued-tokens", f->max_queued_tokens, "PLIMSOLL_MAX_QUEUED_TOKENS",
      "Tokens in flight (prompt + new, every item of every request) before 429 (default 0: 4 x max-batch-total-tokens)");
  opt("--max-waiting-tokens", c.max_waiting_tokens, "MAX_WAITING_TOKENS",
      "Steps a waiting request that does not fit may be overtaken by smaller ones");
  opt("--waiting-served-ratio", c.waiting_served_ratio, "WAITING_SERVED_RATIO",
      "Accepted for TGI compatibility and ignored: Plimsoll admits by KV memory (docs/architecture.md)");
  opt("--block-size", c.engine.block_tokens, "PLIMSOLL_BLOCK_SIZE", "Tokens per KV block");
  add_kv_cache_dtype_flag(*cmd, c.engine.kv_dtype, "PLIMSOLL_KV_CACHE_DTYPE");
  opt("--threads", c.engine.threads, "PLIMSOLL_THREADS", "Engine threads (default 0: the cores available)");
  opt("--huge-pages", c.engine.huge_pages, "PLIMSOLL_HUGE_PAGES",
      "Read a GGUF/llama2.c model into transparent huge pages (false: mmap the file)");
  opt("--http-threads", c.api.threads, "PLIMSOLL_HTTP_THREADS",
      "HTTP handler workers (a non-streamed generation holds one until it ends; streams hold none)");
  opt("--api-key", c.api.api_key, "API_KEY", "Require `Authorization: Bearer KEY` (checked before the body is read)");
  opt("--payload-limit", f->payload_limit, "PAYLOAD_LIMIT", "Largest request body in bytes (413 before it is read)");
  opt("--max-body-bytes-in-flight", f->max_body_bytes_in_flight, "PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT",
      "Budget for request bodies being read and parsed, each counted x33 for its JSON tree; full: 429 "
      "(0: max(64Mi, 33 x payload-limit))");
  opt("--max-connections", c.api.max_connections, "PLIMSOLL_MAX_CONNECTIONS",
      "Open connections; at the cap the one reading its request head longest is closed");
  opt("--max-header-bytes", c.api.max_header_bytes, "PLIMSOLL_MAX_HEADER_BYTES", "Request line + header fields: 431 beyond");
  opt("--max-header-fields", c.api.max_header_fields, "PLIMSOLL_MAX_HEADER_FIELDS", "Header fields per request: 431 beyond");
  opt("--request-read-timeout", c.api.read_timeout_seconds, "PLIMSOLL_REQUEST_READ_TIMEOUT",
      "Seconds to receive a request's head and body, in all (not per read); past it the connection is closed");
  opt("--write-timeout", c.api.write_timeout_seconds, "PLIMSOLL_WRITE_TIMEOUT",
      "Seconds one response write (an SSE batch) may take before the connection is closed");
  opt("--stream-queue-bytes", f->stream_queue_bytes, "PLIMSOLL_STREAM_QUEUE_BYTES",
      "Events waiting for one stream's reader; a slower reader's stream is cancelled with an error event");
  opt("--graceful-timeout", c.graceful_timeout_seconds, "PLIMSOLL_GRACEFUL_TIMEOUT",
      "Seconds requests in flight may take to finish after SIGTERM");
  opt("--model-id", c.api.model_id, "PLIMSOLL_MODEL_ID", "Name reported by /info and /v1/models (default: the path or repo id)");
  return [f] { return run(*f); };
}

}  // namespace plimsoll::cli
