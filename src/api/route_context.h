// RouteContext: what every route handler reaches (config, service, tokenizer,
// metrics, chat template); the route table the transport dispatches from, and
// the route edge that wraps each handler.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "api/api_config.h"
#include "api/chat_prompt.h"
#include "api/http_message.h"
#include "api/prep_pool.h"
#include "engine/grammar/grammar_cache.h"
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
  PrepPool* prep = nullptr;          // the preparation stage (null: prepare() runs inline, as in tests)
  GrammarCache* grammars = nullptr;  // the server's compiled grammars (null: each request compiles its own)

  // ApiConfig::model_id, else the service's.
  std::string model_id() const;
};

using Handler = std::function<void(HttpRequest&, HttpResponse&)>;

enum class Access { kOpen, kKey };          // kKey: `Authorization: Bearer` checked after the head
enum class Runs { kWorker, kInline };       // kInline: on the I/O thread, never waits for a worker

struct Route {
  std::string method;
  std::string path;                 // exact, or with `under` a prefix ("/v1/models/")
  bool under = false;               // matches paths that start with `path` and go on
  Access access = Access::kKey;
  Runs runs = Runs::kWorker;
  Handler handler;
};

class RouteTable {
 public:
  void get(std::string path, Access access, Handler handler, Runs runs = Runs::kWorker);
  void post(std::string path, Access access, Handler handler, Runs runs = Runs::kWorker);
  // GET of any path below `prefix` (which ends with '/'), e.g. "/v1/models/{id}".
  void get_under(std::string prefix, Access access, Handler handler);
  // The route for a method and path (an exact route before a prefix route), or nullptr.
  const Route* find(std::string_view method, std::string_view path) const;

 private:
  std::vector<Route> routes_;
};

// The API key check (constant time): --api-key or a tenant's key; true when
// no key is configured.
bool authorized(const ApiConfig& config, const HttpRequest& req);
// The request's tenant (ApiConfig::tenant_names' index): req.tenant when the
// transport has set it, else its API key's, else its X-Tenant header's when
// trusted, else 0 (the default tenant, also for an unknown name).
int32_t request_tenant(const ApiConfig& config, const HttpRequest& req);

// The route edge: runs the handler; the only catch-all — a JSON error becomes
// 422 with its message, anything else 500. (The key is checked by the
// transport before the body is read: Route::access.)
Handler route_edge(RouteContext& ctx, Handler handler);

void add_tgi_routes(RouteTable& routes, RouteContext& ctx);
void add_openai_routes(RouteTable& routes, RouteContext& ctx);
void add_info_routes(RouteTable& routes, RouteContext& ctx);

// Runs a request's preparation (body -> validated call -> submitted) on
// ctx.prep, cancelled when req's client leaves (PrepPool::run); inline, under
// no deadline, when the context has no pool.
Status prepare(RouteContext& ctx, const HttpRequest& req, const std::function<Status()>& fn);

// Sends `body` as application/json with status 200.
void send_json(HttpResponse& res, const std::string& body);

}  // namespace plimsoll::api
