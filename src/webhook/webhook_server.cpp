// Boost.Beast over asio's SSL: the listening socket, the I/O threads, the TLS
// context (TLS 1.2+, the certificate installed per handshake from the
// CertificateStore), and the routes: /validate (read review -> decide ->
// respond, clean JSON errors) and /healthz.
#include "webhook/webhook_server.h"

#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <vector>
#include <fmt/format.h>

#include "api/accept_loop.h"
#include "webhook/admission_review.h"
#include "webhook/certificate_store.h"
#include "webhook/webhook_session.h"

namespace plimsoll::webhook {

namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

constexpr const char* kJson = "application/json";
// How long stop() lets requests being answered finish.
constexpr std::chrono::seconds kStopGrace{2};

}  // namespace

struct WebhookServer::Impl {
  explicit Impl(WebhookConfig c)
      : config(std::move(c)),
        shared{tls, routes, config.payload_limit_bytes, config.read_timeout_seconds, config.read_timeout_seconds} {}

  void accept();

  WebhookConfig config;
  std::unique_ptr<CertificateStore> certs;
  ssl::context tls{ssl::context::tls_server};
  api::RouteTable routes;
  SessionShared shared;
  net::io_context ioc;  // after what the sessions use: destroyed first
  tcp::acceptor acceptor{net::make_strand(ioc)};
  net::steady_timer accept_retry{acceptor.get_executor()};
  std::vector<std::thread> threads;
  std::atomic<bool> stopped{false};
  int port = 0;
};

namespace {

// "Deployment ns/name" for the log.
std::string object_name(const nlohmann::json& object) {
  const nlohmann::json meta = object.value("metadata", nlohmann::json::object());
  auto text = [&](const char* key) {
    return meta.is_object() && meta.contains(key) && meta[key].is_string() ? meta[key].get<std::string>() : "";
  };
  const nlohmann::json kind = object.value("kind", nlohmann::json());
  return (kind.is_string() ? kind.get<std::string>() : "?") + " " + text("namespace") + "/" + text("name");
}

int on_handshake(SSL* ssl, void* arg) {
  auto* store = static_cast<CertificateStore*>(arg);
  store->refresh();
  return store->install(ssl) ? 1 : 0;
}

void validate(const PolicyConfig& policy, const api::HttpRequest& req, api::HttpResponse& res) {
  auto review = parse_admission_review(req.body);
  if (!review) {
    res.status = 400;
    res.set_content(error_json(review.error().message), kJson);
    return;
  }
  const Decision decision = review->object.is_object() ? decide(review->object, policy) : Decision{};
  if (decision.reviewed) {
    spdlog::info("webhook: {} {}: {}{}", review->operation, object_name(review->object),
                 decision.allowed ? "allowed" : "denied: ", decision.message);
  }
  res.set_content(admission_response(*review, decision), kJson);
}

void add_routes(api::RouteTable& routes, const WebhookConfig& config) {
  const PolicyConfig policy = config.policy;
  routes.post("/validate", api::Access::kOpen, [policy](api::HttpRequest& req, api::HttpResponse& res) {
    try {
      validate(policy, req, res);
    } catch (const std::exception& e) {  // a JSON type the reader did not expect: still a clean answer
      res.status = 400;
      res.set_content(error_json(std::string("cannot read the review: ") + e.what()), kJson);
    }
  });
  routes.get("/healthz", api::Access::kOpen,
             [](api::HttpRequest&, api::HttpResponse& res) { res.set_content("ok\n", "text/plain"); });
}

Status set_up_tls(ssl::context& tls, CertificateStore* store) {
  boost::system::error_code ec;
  tls.set_options(ssl::context::default_workarounds | ssl::context::no_compression, ec);
  if (ec || SSL_CTX_set_min_proto_version(tls.native_handle(), TLS1_2_VERSION) != 1) {
    return make_error(ErrorCode::kInternal, "cannot set up the TLS context");
  }
  SSL_CTX_set_cert_cb(tls.native_handle(), on_handshake, store);
  return {};
}

// An address, or a name resolved to its first address.
tcp::endpoint endpoint_of(net::io_context& ioc, const std::string& host, int port, boost::system::error_code& ec) {
  const net::ip::address address = net::ip::make_address(host, ec);
  if (!ec) return tcp::endpoint(address, static_cast<unsigned short>(port));
  auto results = tcp::resolver(ioc).resolve(host, fmt::to_string(port), ec);
  if (!ec && results.empty()) ec = net::error::host_not_found;
  return ec ? tcp::endpoint() : results.begin()->endpoint();
}

Status listen(net::io_context& ioc, tcp::acceptor& acceptor, const std::string& host, int port) {
  boost::system::error_code ec;
  const tcp::endpoint endpoint = endpoint_of(ioc, host, port, ec);
  if (!ec) acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return make_error(ErrorCode::kIo, fmt::format("cannot listen on {}:{}", host, port));
  return {};
}

}  // namespace

void WebhookServer::Impl::accept() {
  api::accept_loop(ioc, acceptor, accept_retry, "webhook: ",
                   [this](tcp::socket socket) { serve_tls_connection(std::move(socket), shared); });
}

WebhookServer::WebhookServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebhookServer::~WebhookServer() {
  stop();
  wait();
}

Result<std::unique_ptr<WebhookServer>> WebhookServer::create(WebhookConfig config) {
  auto impl = std::make_unique<Impl>(std::move(config));
  PLIMSOLL_ASSIGN(impl->certs, CertificateStore::load(impl->config.tls_cert_path, impl->config.tls_key_path));
  PLIMSOLL_TRY(set_up_tls(impl->tls, impl->certs.get()));
  add_routes(impl->routes, impl->config);
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

Status WebhookServer::start() {
  Impl& s = *impl_;
  if (!s.threads.empty()) return make_error(ErrorCode::kInvalidArgument, "the webhook server is already started");
  PLIMSOLL_TRY(listen(s.ioc, s.acceptor, s.config.hostname, s.config.port));
  s.port = s.acceptor.local_endpoint().port();
  s.accept();
  for (int i = 0; i < std::max(s.config.threads, 1); ++i) s.threads.emplace_back([&s] { s.ioc.run(); });
  return {};
}

int WebhookServer::port() const { return impl_->port; }

// Stops accepting, lets the requests being answered finish (up to
// kStopGrace), then ends every connection.
void WebhookServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  Impl& s = *impl_;
  net::post(s.acceptor.get_executor(), [&s] {
    boost::system::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_retry.cancel();
  });
  const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  while (s.shared.active.load() > 0 && std::chrono::steady_clock::now() < deadline && !s.threads.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  s.ioc.stop();
}

void WebhookServer::wait() {
  if (!impl_) return;
  for (std::thread& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

}  // namespace plimsoll::webhook
