// Client: each call builds a body (wire.h), sends it (transport.h) and reads
// the answer; generate_batch plans chunks from /info and runs them.
#include "client/client.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "client/chunking.h"
#include "client/sse.h"
#include "client/transport.h"
#include "client/wire.h"

namespace plimsoll::client {
namespace {

ClientResult<Generation> first(ClientResult<GenerationList> list) {
  if (!list) return list.error();
  return std::move(list->items.front());
}

}  // namespace

Client::Client(std::string base_url, ClientOptions options)
    : transport_(std::make_unique<Transport>(std::move(base_url), std::move(options))) {}

Client::~Client() = default;

ClientResult<ServerInfo> Client::info() {
  ClientResult<wire::HttpReply> reply = transport_->get("/info");
  if (!reply) return reply.error();
  return wire::parse_info(*reply);
}

ClientResult<ServerInfo> Client::info_with_retry(const RetryPolicy& policy) {
  const auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(std::random_device{}());
  for (int64_t retries = 0;; ++retries) {
    ClientResult<ServerInfo> result = info();
    if (result) return result;
    const auto elapsed_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
    std::optional<int64_t> wait_ms = retry_wait_ms(policy, result.error(), retries, elapsed_ms, rng);
    if (!wait_ms) return result;
    spdlog::warn("/info: {}; retry {} in {} ms", result.error().describe(), retries + 1, *wait_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(*wait_ms));
  }
}

ClientResult<Generation> Client::generate(const std::string& prompt, const GenerateParams& params) {
  ClientResult<wire::HttpReply> reply = transport_->post_json("/generate", wire::generate_body({prompt}, false, params));
  if (!reply) return reply.error();
  return first(wire::parse_generate(*reply, 1, false));
}

ClientResult<GenerationList> Client::generate_list(const std::vector<std::string>& prompts,
                                                   const GenerateParams& params) {
  if (prompts.empty()) return GenerationList{};
  ClientResult<wire::HttpReply> reply = transport_->post_json("/generate", wire::generate_body(prompts, true, params));
  if (!reply) return reply.error();
  return wire::parse_generate(*reply, prompts.size(), true);
}

ClientResult<Generation> Client::generate_stream(const std::string& prompt, const GenerateParams& params,
                                                 const std::function<bool(const StreamToken&)>& on_token) {
  SseParser parser;
  Generation out;
  int64_t tokens = 0;
  bool finished = false;
  std::optional<ClientError> failure;
  auto on_data = [&](std::string_view data) {
    ClientResult<wire::StreamEvent> event = wire::parse_stream_event(data);
    if (!event) failure = event.error();
    else if (event->error) failure = *event->error;
    if (failure) return false;
    if (event->token && !event->token->special) out.text += event->token->text;
    if (event->token) ++tokens;
    const bool keep_going = !event->token || !on_token || on_token(*event->token);
    if (event->final) {
      out = *event->final;
      finished = true;
    }
    return keep_going && !finished;
  };
  ClientResult<wire::HttpReply> reply = transport_->post_stream(
      "/generate_stream", wire::generate_body({prompt}, false, params),
      [&](std::string_view bytes) { return parser.feed(bytes, on_data); });
  if (!reply) return reply.error();
  if (reply->status < 200 || reply->status >= 300) return wire::error_from_reply(*reply);
  if (failure) return *failure;
  if (!out.generated_tokens) out.generated_tokens = tokens;
  if (!finished) out.finish_reason = "cancelled";
  return out;
}

ClientResult<int64_t> Client::plan_chunk_size(int64_t user_cap, const RetryPolicy& policy) {
  ClientResult<ServerInfo> server = info_with_retry(policy);
  if (!server && server.error().retryable()) return server.error();
  std::optional<ServerInfo> known;
  if (server) {
    known = *server;
  } else {
    spdlog::warn("/info: {}; chunk size from --chunk-size alone", server.error().describe());
  }
  const int64_t size = choose_chunk_size(known, user_cap);
  spdlog::info("chunk size {} (server safe_client_batch_size {}, max_client_batch_size {}, user cap {})", size,
               known ? known->safe_client_batch_size : 0, known ? known->max_client_batch_size : 0, user_cap);
  return size;
}

BatchResult Client::generate_batch(const std::vector<std::string>& prompts, const GenerateParams& params,
                                   const BatchOptions& options) {
  ClientResult<int64_t> chunk_size = plan_chunk_size(options.max_chunk_size, options.retry);
  if (!chunk_size) {
    BatchResult failed;
    for (size_t i = 0; i < prompts.size(); ++i) failed.items.emplace_back(chunk_size.error());
    failed.stats.failed = static_cast<int64_t>(prompts.size());
    return failed;
  }
  std::vector<Chunk> chunks = plan_chunks(index_range(0, prompts.size()), *chunk_size);
  ChunkSender send = [&](const Chunk& chunk) {
    std::vector<std::string> inputs;
    for (size_t index : chunk) inputs.push_back(prompts[index]);
    return generate_list(inputs, params);
  };
  BatchResult result = run_chunks(prompts.size(), chunks, send, options);
  result.stats.chunk_size = *chunk_size;
  return result;
}

ClientResult<Generation> Client::completions(const std::string& prompt, const OpenAiParams& params) {
  ClientResult<wire::HttpReply> reply =
      transport_->post_json("/v1/completions", wire::completions_body({prompt}, false, params));
  if (!reply) return reply.error();
  return first(wire::parse_completions(*reply, 1));
}

ClientResult<GenerationList> Client::completions_list(const std::vector<std::string>& prompts,
                                                      const OpenAiParams& params) {
  if (prompts.empty()) return GenerationList{};
  ClientResult<wire::HttpReply> reply =
      transport_->post_json("/v1/completions", wire::completions_body(prompts, true, params));
  if (!reply) return reply.error();
  return wire::parse_completions(*reply, prompts.size());
}

ClientResult<Generation> Client::chat(const std::vector<ChatMessage>& messages, const OpenAiParams& params) {
  ClientResult<wire::HttpReply> reply = transport_->post_json("/v1/chat/completions", wire::chat_body(messages, params));
  if (!reply) return reply.error();
  return wire::parse_chat(*reply);
}

}  // namespace plimsoll::client
