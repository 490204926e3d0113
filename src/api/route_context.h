// RouteContext: what every route handler reaches (config, service, tokenizer,
// metrics, chat template), and the route edge that wraps each handler.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <string>

#include "api/api_config.h"
#include "api/chat_template.h"
#include "metrics/server_metrics.h"
#include "sched/generation_service.h"
#include "tokenizer/text_tokenizer.h"

namespace plimsoll::api {

struct RouteContext {
  const ApiConfig& config;
  sched::GenerationService& service;
  const TextTokenizer& tokenizer;
  metrics::ServerMetrics& metrics;
  ChatPromptFormat chat;
  std::function<void()> scrape_hook;  // refreshes server-owned gauges before /metrics renders
  std::atomic<bool> stopping{false};
  std::atomic<int> open_streams{0};  // SSE responses not yet destroyed (StreamPump counts them)

  // ApiConfig::model_id, else the service's.
  std::string model_id() const;
};

// The route edge: checks the API key (when `needs_auth`), then runs the
// handler; the only catch-all — a JSON error becomes 422 with its message,
// anything else 500.
httplib::Server::Handler route_edge(RouteContext& ctx, bool needs_auth,
                                    httplib::Server::Handler handler);

void add_tgi_routes(httplib::Server& server, RouteContext& ctx);
void add_openai_routes(httplib::Server& server, RouteContext& ctx);
void add_info_routes(httplib::Server& server, RouteContext& ctx);

// Sends `body` as application/json with status 200.
void send_json(httplib::Response& res, const std::string& body);

}  // namespace plimsoll::api
