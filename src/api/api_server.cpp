// ApiServer: configures cpp-httplib (thread pool, limits, timeouts, JSON
// bodies for its own errors), registers the routes and runs the listener.
#include "api/api_server.h"

#include <sys/socket.h>

#include <spdlog/spdlog.h>

#include "api/listen_backlog.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include "api/errors.h"
#include "api/route_context.h"

namespace plimsoll::api {

struct ApiServer::Impl {
  Impl(ApiConfig cfg, sched::GenerationService& service, const TextTokenizer& tokenizer,
       metrics::ServerMetrics& metrics, ChatPromptFormat chat)
      : config(std::move(cfg)),
        ctx{config, service, tokenizer, metrics, std::move(chat), nullptr} {}

  void configure();

  ApiConfig config;
  RouteContext ctx;
  httplib::Server server;
  std::thread listener;
  int port = 0;
};

namespace {

// How long stop() lets open streams flush before the listener closes; a
// client that stopped reading must not hold the shutdown.
constexpr std::chrono::seconds kStreamFlushTimeout{2};

// Bodies for the statuses httplib answers by itself (404, 413, 400...).
httplib::Server::HandlerResponse library_error(const httplib::Request& req, httplib::Response& res,
                                               int64_t payload_limit_bytes) {
  if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
  ApiError e{res.status, "validation", "bad request"};
  if (res.status == 404) e = {404, "not_found", "no route " + req.method + " " + req.path};
  if (res.status == 413) {
    e = {413, "validation", "payload too large: the limit is " + std::to_string(payload_limit_bytes) + " bytes"};
  }
  send_error(res, e);
  return httplib::Server::HandlerResponse::Handled;
}

}  // namespace

void ApiServer::Impl::configure() {
  const int threads = std::max(config.threads, 4);
  server.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  server.set_payload_max_length(static_cast<size_t>(config.payload_limit_bytes));
  server.set_read_timeout(config.read_timeout_seconds, 0);
  server.set_write_timeout(config.write_timeout_seconds, 0);
  server.set_tcp_nodelay(true);  // SSE frames leave at once
  const int64_t limit = config.payload_limit_bytes;
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [limit](const httplib::Request& req, httplib::Response& res) {
        return library_error(req, res, limit);
      }));
  // Debian's httplib applies the payload limit only to bodies with a
  // Content-Length; a chunked body would be read whole, whatever its size.
  // Refuse chunked bodies before any of it is read.
  server.set_pre_routing_handler([limit](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Transfer-Encoding").find("chunked") == std::string::npos) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    send_error(res, ApiError{411, "validation",
                             "chunked request bodies are not accepted: send the body with a Content-Length "
                             "(at most " + std::to_string(limit) + " bytes)"});
    res.set_header("Connection", "close");
    return httplib::Server::HandlerResponse::Handled;
  });
  add_info_routes(server, ctx);
  add_tgi_routes(server, ctx);
  add_openai_routes(server, ctx);
}

ApiServer::ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
                     metrics::ServerMetrics& metrics, ChatTemplateFn chat_template)
    : ApiServer(std::move(config), service, tokenizer, metrics,
                ChatPromptFormat{chat_template ? std::move(chat_template) : default_chat_template, std::nullopt}) {}

ApiServer::ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
                     metrics::ServerMetrics& metrics, ChatPromptFormat chat) {
  if (!chat.render) chat.render = default_chat_template;
  impl_ = std::make_unique<Impl>(std::move(config), service, tokenizer, metrics, std::move(chat));
  impl_->configure();
}

ApiServer::~ApiServer() {
  stop();
  wait();
}

void ApiServer::set_scrape_hook(std::function<void()> hook) { impl_->ctx.scrape_hook = std::move(hook); }

Status ApiServer::start() {
  Impl& s = *impl_;
  if (s.listener.joinable()) return make_error(ErrorCode::kInvalidArgument, "the API server is already started");
  if (s.config.port == 0) {
    s.port = s.server.bind_to_any_port(s.config.hostname);
    if (s.port <= 0) s.port = 0;
  } else if (s.server.bind_to_port(s.config.hostname, s.config.port)) {
    s.port = s.config.port;
  }
  if (s.port == 0) {
    return make_error(ErrorCode::kIo, "cannot listen on " + s.config.hostname + ":" +
                                          std::to_string(s.config.port));
  }
  if (!raise_listen_backlog(s.port, SOMAXCONN)) {
    spdlog::warn("could not raise the listen backlog of port {}; bursts of connections may be reset", s.port);
  }
  s.listener = std::thread([&s] { s.server.listen_after_bind(); });
  // httplib's stop() is a no-op until the loop runs: do not return before it does.
  while (!s.server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return {};
}

int ApiServer::port() const { return impl_->port; }

void ApiServer::stop() {
  impl_->ctx.stopping.store(true);
  // httplib ends every chunked response the moment its listener closes, so
  // open streams first write what is queued (their final or error events).
  const auto deadline = std::chrono::steady_clock::now() + kStreamFlushTimeout;
  while (impl_->ctx.open_streams.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  impl_->server.stop();
}

void ApiServer::wait() {
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace plimsoll::api
