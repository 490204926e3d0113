// ApiServer: the Boost.Beast transport's owner — the listening socket
// (backlog SOMAXCONN), the I/O threads, the worker pool, the body budget and
// the connection registry — and the route table it serves.
#include "api/api_server.h"

#include <sys/socket.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>
#include <fmt/format.h>

#include "api/accept_loop.h"
#include "api/http_session.h"
#include "api/route_context.h"

namespace plimsoll::api {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

// How long stop() lets requests in flight answer and open streams flush
// their queued final or error events; a client that stopped reading must
// not hold the shutdown.
constexpr std::chrono::seconds kStreamFlushTimeout{2};
// How long stop() waits for closed connections to finish their handlers.
constexpr std::chrono::seconds kCloseTimeout{1};

Result<tcp::endpoint> resolve(net::io_context& ioc, const std::string& host, int port) {
  boost::system::error_code ec;
  net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, static_cast<unsigned short>(port));
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(host, fmt::to_string(port), ec);
  if (ec || results.empty()) {
    return make_error(ErrorCode::kIo, fmt::format("cannot listen on {}:{}: {}", host, port, ec.message()));
  }
  return results.begin()->endpoint();
}

}  // namespace

struct ApiServer::Impl {
  Impl(ApiConfig cfg, sched::GenerationService& service, const TextTokenizer& tokenizer,
       metrics::ServerMetrics& metrics, ChatPromptFormat chat)
      : config(std::move(cfg)),
        ctx{config, service, tokenizer, metrics, std::move(chat), nullptr},
        tenants(tenant_set(config)),
        refusals(tenants.size()),
        connections(config.max_connections, tenants.weights),
        workers(std::max(config.threads, 4), static_cast<size_t>(std::max(config.max_connections, 1)),
                tenants.weights),
        prep(config.prep_threads, static_cast<size_t>(std::max(config.prep_queue, 1)),
             std::chrono::milliseconds(config.prep_timeout_ms), config.max_concurrent_compiles,
             [&service](int64_t bytes) -> Result<std::shared_ptr<void>> {
               sched::ByteReservation r =
                   service.reserve_bytes(bytes, "compiling a grammar", sched::BackstopCheck::kAtSubmit);
               if (!r.ok()) return r.rejection->error;
               return r.hold;
             },
             tenants, &refusals),
        transport{config,
                  ctx,
                  routes,
                  workers,
                  BodyBudget::create(body_budget_bytes(config), tenants.weights, body_reservable_bytes(config)),
                  connections,
                  tenants,
                  refusals} {
    ctx.prep = &prep;
    add_info_routes(routes, ctx);
    add_tgi_routes(routes, ctx);
    add_openai_routes(routes, ctx);
  }

  void accept();

  ApiConfig config;
  RouteContext ctx;
  RouteTable routes;
  TenantSet tenants;         // who shares the workers, preparations, body budget and connections
  TenantRefusals refusals;   // per tenant: requests refused for its share of them
  ConnectionRegistry connections;
  WorkerPool workers;
  PrepPool prep;  // after the workers: they wait on it, so it stops first (stop())
  Transport transport;
  // Sessions (held by handlers queued here) use the members above, so the
  // I/O context is destroyed first.
  net::io_context ioc;
  // Keeps the I/O threads running while handlers on workers may still post
  // their responses, after the acceptor (the last pending operation) closes.
  net::executor_work_guard<net::io_context::executor_type> work{ioc.get_executor()};
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  std::vector<std::thread> io_threads;
  std::atomic<bool> stopped{false};
  int port = 0;
};

void ApiServer::Impl::accept() {
  accept_loop(ioc, acceptor, accept_retry, "", [this](tcp::socket socket) { serve_connection(std::move(socket), transport); });
}

ApiServer::ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
                     metrics::ServerMetrics& metrics, ChatTemplateFn chat_template)
    : ApiServer(std::move(config), service, tokenizer, metrics,
                ChatPromptFormat{chat_template ? std::move(chat_template) : default_chat_template, std::nullopt}) {}

ApiServer::ApiServer(ApiConfig config, sched::GenerationService& service, const TextTokenizer& tokenizer,
                     metrics::ServerMetrics& metrics, ChatPromptFormat chat) {
  if (!chat.render) chat.render = default_chat_template;
  impl_ = std::make_unique<Impl>(std::move(config), service, tokenizer, metrics, std::move(chat));
}

ApiServer::~ApiServer() {
  stop();
  wait();
}

void ApiServer::set_scrape_hook(std::function<void()> hook) { impl_->ctx.scrape_hook = std::move(hook); }

void ApiServer::set_grammar_cache(GrammarCache* cache) { impl_->ctx.grammars = cache; }

Status check_transport_config(const ApiConfig& c) {
  const int64_t one_body = body_reservation_bytes(c.payload_limit_bytes);
  if (body_budget_bytes(c) < one_body) {
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("--max-body-bytes-in-flight {} cannot hold one body of --payload-limit {} bytes, "
                                  "which reserves {} (x (1 + {}) for its JSON tree)",
                                  body_budget_bytes(c), c.payload_limit_bytes, one_body, kJsonTreeBytesPerBodyByte));
  }
  if (c.prep_threads < 1 || c.prep_queue < 1 || c.prep_timeout_ms < 1 || c.max_concurrent_compiles < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--prep-threads, --prep-queue, --prep-timeout-ms and --max-concurrent-compiles must be positive");
  }
  if (c.max_connections < 1 || c.max_header_fields < 1 || c.max_header_bytes < 1024 || c.read_timeout_seconds < 1 ||
      c.write_timeout_seconds < 1 || c.io_threads < 1 || c.stream_queue_bytes < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--max-connections, --max-header-fields, --request-read-timeout, --write-timeout and "
                      "--stream-queue-bytes must be positive, --max-header-bytes at least 1024");
  }
  return {};
}

Status ApiServer::start() {
  Impl& s = *impl_;
  if (!s.io_threads.empty()) return make_error(ErrorCode::kInvalidArgument, "the API server is already started");
  PLIMSOLL_TRY(check_transport_config(s.config));
  PLIMSOLL_ASSIGN(tcp::endpoint endpoint, resolve(s.ioc, s.config.hostname, s.config.port));
  boost::system::error_code ec;
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(SOMAXCONN, ec);
  if (ec) {
    return make_error(ErrorCode::kIo,
                      fmt::format("cannot listen on {}:{}: {}", s.config.hostname, s.config.port, ec.message()));
  }
  s.port = s.acceptor.local_endpoint().port();
  s.accept();
  for (int i = 0; i < s.config.io_threads; ++i) s.io_threads.emplace_back([&s] { s.ioc.run(); });
  return {};
}

int ApiServer::port() const { return impl_->port; }

void ApiServer::stop_preparing() { impl_->prep.stop(); }

std::vector<int64_t> ApiServer::tenant_refusals() const { return impl_->refusals.snapshot(); }

void ApiServer::stop() {
  Impl& s = *impl_;
  if (s.stopped.exchange(true)) return;
  s.ctx.stopping.store(true);
  // Preparations running or waiting are cancelled now (a grammar compile
  // stops at its next poll point), whatever they were doing.
  s.prep.stop();
  net::post(s.acceptor.get_executor(), [&s] {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  // Requests in flight answer (503 while stopping); open streams write what
  // is queued for them (their final or error events), then end.
  const auto deadline = std::chrono::steady_clock::now() + kStreamFlushTimeout;
  while ((s.transport.active_requests.load() > 0 || s.ctx.open_streams.load() > 0) &&
         std::chrono::steady_clock::now() < deadline && !s.io_threads.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.connections.close_all();
  s.workers.stop();
  const auto closed_by = std::chrono::steady_clock::now() + kCloseTimeout;
  while (s.connections.size() > 0 && std::chrono::steady_clock::now() < closed_by && !s.io_threads.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.work.reset();
  s.ioc.stop();
}

void ApiServer::wait() {
  for (std::thread& t : impl_->io_threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace plimsoll::api
