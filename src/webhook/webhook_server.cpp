// cpp-httplib's SSLServer with a per-handshake certificate callback, the
// /validate route (read review -> decide -> respond) and clean JSON errors.
#include "webhook/webhook_server.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <thread>

#include "webhook/admission_review.h"
#include "webhook/certificate_store.h"

namespace plimsoll::webhook {

struct WebhookServer::Impl {
  WebhookConfig config;
  std::unique_ptr<CertificateStore> certs;
  std::unique_ptr<httplib::SSLServer> server;
  std::thread listener;
  int port = 0;
};

namespace {

constexpr const char* kJson = "application/json";

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

void validate(const PolicyConfig& policy, const httplib::Request& req, httplib::Response& res) {
  auto review = parse_admission_review(req.body);
  if (!review) {
    res.status = 400;
    res.set_content(error_json(review.error().message), kJson);
    return;
  }
  const Decision decision = review->object.is_object() ? decide(review->object, policy) : Decision{};
  if (decision.runs_plimsoll) {
    spdlog::info("webhook: {} {}: {}{}", review->operation, object_name(review->object),
                 decision.allowed ? "allowed" : "denied: ", decision.message);
  }
  res.set_content(admission_response(*review, decision), kJson);
}

void add_routes(httplib::SSLServer& server, const WebhookConfig& config) {
  const PolicyConfig policy = config.policy;
  server.Post("/validate", [policy](const httplib::Request& req, httplib::Response& res) {
    try {
      validate(policy, req, res);
    } catch (const std::exception& e) {  // a JSON type the reader did not expect: still a clean answer
      res.status = 400;
      res.set_content(error_json(std::string("cannot read the review: ") + e.what()), kJson);
    }
  });
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string what = res.status == 413 ? "payload too large" : "no route " + req.method + " " + req.path;
    res.set_content(error_json(what), kJson);
  });
}

}  // namespace

WebhookServer::WebhookServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WebhookServer::~WebhookServer() {
  stop();
  wait();
}

Result<std::unique_ptr<WebhookServer>> WebhookServer::create(WebhookConfig config) {
  auto impl = std::make_unique<Impl>();
  impl->config = std::move(config);
  PLIMSOLL_ASSIGN(impl->certs, CertificateStore::load(impl->config.tls_cert_path, impl->config.tls_key_path));
  CertificateStore* store = impl->certs.get();
  impl->server = std::make_unique<httplib::SSLServer>([store](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    SSL_CTX_set_cert_cb(&ctx, on_handshake, store);
    return true;
  });
  if (!impl->server->is_valid()) return make_error(ErrorCode::kInternal, "cannot set up the TLS context");
  httplib::SSLServer& s = *impl->server;
  const int threads = impl->config.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  s.set_payload_max_length(static_cast<size_t>(impl->config.payload_limit_bytes));
  s.set_read_timeout(impl->config.read_timeout_seconds, 0);
  s.set_write_timeout(impl->config.read_timeout_seconds, 0);
  add_routes(s, impl->config);
  return std::unique_ptr<WebhookServer>(new WebhookServer(std::move(impl)));
}

Status WebhookServer::start() {
  Impl& s = *impl_;
  if (s.listener.joinable()) return make_error(ErrorCode::kInvalidArgument, "the webhook server is already started");
  s.port = s.config.port == 0 ? s.server->bind_to_any_port(s.config.hostname)
                              : (s.server->bind_to_port(s.config.hostname, s.config.port) ? s.config.port : -1);
  if (s.port <= 0) {
    return make_error(ErrorCode::kIo, "cannot listen on " + s.config.hostname + ":" + std::to_string(s.config.port));
  }
  s.listener = std::thread([&s] { s.server->listen_after_bind(); });
  return {};
}

int WebhookServer::port() const { return impl_->port; }

void WebhookServer::stop() {
  if (impl_ && impl_->server) impl_->server->stop();
}

void WebhookServer::wait() {
  if (impl_ && impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace plimsoll::webhook
