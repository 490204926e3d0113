// Client: one Plimsoll (or TGI / OpenAI-compatible) server over HTTP. Thread-
// safe; connections are kept alive and reused; every call returns a value.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/batch_runner.h"
#include "client/client_error.h"
#include "client/retry_policy.h"
#include "client/types.h"

namespace plimsoll::client {

class Transport;

class Client {
 public:
  // base_url: "http://host:port" (a path prefix is kept: "http://host/tgi").
  explicit Client(std::string base_url, ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // GET /info, one attempt.
  ClientResult<ServerInfo> info();
  // GET /info, retried by `policy` while the server is overloaded or away.
  ClientResult<ServerInfo> info_with_retry(const RetryPolicy& policy);

  // POST /generate, one attempt (errors carry retry_after_seconds for 429).
  ClientResult<Generation> generate(const std::string& prompt, const GenerateParams& params = {});
  // POST /generate with list inputs, one request: one Generation per prompt, in order.
  ClientResult<GenerationList> generate_list(const std::vector<std::string>& prompts, const GenerateParams& params);
  // POST /generate_stream: on_token per token (return false to stop early); the
  // result is the final text (finish_reason "cancelled" when stopped).
  ClientResult<Generation> generate_stream(const std::string& prompt, const GenerateParams& params,
                                           const std::function<bool(const StreamToken&)>& on_token);
  // Any number of prompts: /info read once, chunks of the server's safe size
  // (or options.max_chunk_size if smaller), options.parallel at once, retried;
  // results in input order, one per prompt (an error for a failed item).
  BatchResult generate_batch(const std::vector<std::string>& prompts, const GenerateParams& params,
                             const BatchOptions& options = {});

  // POST /v1/completions (one prompt, or a list in one request).
  ClientResult<Generation> completions(const std::string& prompt, const OpenAiParams& params = {});
  ClientResult<GenerationList> completions_list(const std::vector<std::string>& prompts, const OpenAiParams& params);
  // POST /v1/chat/completions.
  ClientResult<Generation> chat(const std::vector<ChatMessage>& messages, const OpenAiParams& params = {});

  // The chunk size a batch uses: /info read with retries, then choose_chunk_size.
  // An error only when the server stayed away (or overloaded) past the deadline.
  ClientResult<int64_t> plan_chunk_size(int64_t user_cap, const RetryPolicy& policy);

 private:
  std::unique_ptr<Transport> transport_;
};

}  // namespace plimsoll::client
