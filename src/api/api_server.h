// ApiServer: the HTTP front door — TGI and OpenAI routes over Boost.Beast
// (src/api/http_session.cpp: limits, threading), built from a
// GenerationService, a TextTokenizer and the server's metrics.
#pragma once

#include <functional>
#include <memory>

#include "api/api_config.h"
#include "api/chat_prompt.h"
#include "core/result.h"
#include "metrics/server_metrics.h"
#include "sched/generation_service.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll {
class GrammarCache;
}  // namespace plimsoll

namespace plimsoll::api {

// The transport settings are consistent: every limit positive, and the body
// budget holds one body of the payload limit (kInvalidArgument naming the flags).
Status check_transport_config(const ApiConfig& config);

class ApiServer {
 public:
  // Everything passed by reference must outlive the server.
  ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
            metrics::ServerMetrics& metrics, ChatTemplateFn chat_template = default_chat_template);
  // With the chat prompt format (e.g. model_chat_format's).
  ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
            metrics::ServerMetrics& metrics, ChatPromptFormat chat);
  ~ApiServer();  // stop() and wait()
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  // Runs before each /metrics render, e.g. to refresh resident-memory gauges.
  // Set before start().
  void set_scrape_hook(std::function<void()> hook);
  // The server's grammar cache (a line of the memory plan), which must
  // outlive the server; without one each request compiles its own grammar.
  // Set before start().
  void set_grammar_cache(GrammarCache* cache);

  // Checks the config (check_transport_config), binds hostname:port (kIo
  // when it cannot) and serves on ApiConfig::io_threads background threads.
  Status start();
  // The bound port (the chosen one when ApiConfig::port was 0); 0 before start().
  int port() const;
  // Cancels every request still in preparation (parse, template, tokenization,
  // grammar compile) and answers new ones 503; what was admitted goes on.
  // The first step of a graceful shutdown. Idempotent.
  void stop_preparing();
  // Per tenant (ApiConfig::tenant_names' order): requests refused (429) for
  // the tenant's share of the HTTP workers, preparation pool, body budget or
  // connections (api/tenant_shares.h).
  std::vector<int64_t> tenant_refusals() const;
  // Stops accepting; waiting requests answer 503; open streams write what is
  // queued for them (up to 2 s), then end. Idempotent.
  void stop();
  // Blocks until the server has stopped.
  void wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace plimsoll::api
