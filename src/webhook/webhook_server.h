// The admission webhook's HTTPS server: POST /validate (AdmissionReview v1),
// GET /healthz; TLS from files that are reloaded when they change.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "webhook/admission_policy.h"

namespace plimsoll::webhook {

struct WebhookConfig {
  std::string hostname = "0.0.0.0";
  int port = 8443;                                 // 0: an ephemeral port (see port())
  std::string tls_cert_path;
  std::string tls_key_path;
  PolicyConfig policy;
  int64_t payload_limit_bytes = 8 * 1024 * 1024;   // AdmissionReviews of large objects are a few MiB at most
  int read_timeout_seconds = 10;                   // the API server's own timeout is at most 30 s
  int threads = 8;
};

class WebhookServer {
 public:
  static Result<std::unique_ptr<WebhookServer>> create(WebhookConfig config);
  ~WebhookServer();

  Status start();  // binds and serves on a thread of its own
  int port() const;
  void stop();
  void wait();

  struct Impl;

 private:
  explicit WebhookServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace plimsoll::webhook
