// `plimsoll webhook`: the validating admission webhook (HTTPS, AdmissionReview
// v1 on POST /validate); flags with environment variables, runs until SIGTERM.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "webhook/webhook_server.h"

namespace plimsoll::cli {
namespace {

struct WebhookFlags {
  webhook::WebhookConfig config;
  std::string check_against = "request";
};

int run(WebhookFlags& f) {
  webhook::WebhookConfig& c = f.config;
  c.policy.check_against = f.check_against == "limit" ? webhook::PolicyConfig::CheckAgainst::kLimit
                                                      : webhook::PolicyConfig::CheckAgainst::kRequest;
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts: sigwait below takes them
  auto server = webhook::WebhookServer::create(c);
  if (!server) return spdlog::error("{}", server.error().message), 1;
  if (auto s = (*server)->start(); !s) return spdlog::error("{}", s.error().message), 1;
  spdlog::info("webhook: listening on https://{}:{} (POST /validate), plans checked against the memory {}",
               c.hostname, (*server)->port(), f.check_against);
  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("webhook: signal {}, stopping", signal);
  (*server)->stop();
  (*server)->wait();
  return 0;
}

}  // namespace

Runner add_webhook_command(CLI::App& app) {
  auto f = std::make_shared<WebhookFlags>();
  webhook::WebhookConfig& c = f->config;
  CLI::App* cmd = app.add_subcommand(
      "webhook", "Kubernetes validating admission webhook: deny workloads whose memory plan does not fit");
  auto opt = [&](const std::string& names, auto& value, const std::string& env, const std::string& help) {
    return cmd->add_option(names, value, help)->envname(env)->capture_default_str();
  };
  opt("--tls-cert", c.tls_cert_path, "PLIMSOLL_WEBHOOK_TLS_CERT", "PEM certificate (chain); reloaded when it changes")
      ->required();
  opt("--tls-key", c.tls_key_path, "PLIMSOLL_WEBHOOK_TLS_KEY", "PEM private key; reloaded when it changes")->required();
  opt("--hostname", c.hostname, "PLIMSOLL_WEBHOOK_HOSTNAME", "Address to listen on");
  opt("-p,--port", c.port, "PLIMSOLL_WEBHOOK_PORT", "Port to listen on (0: any free port)");
  opt("--check-against", f->check_against, "PLIMSOLL_WEBHOOK_CHECK_AGAINST",
      "The container memory quantity the plan must fit: request or limit")
      ->check(CLI::IsMember({"request", "limit"}));
  cmd->add_flag("--require-model-metadata", c.policy.require_model_metadata,
                "Deny Plimsoll workloads without plimsoll.dev/model-* annotations (default: warn)")
      ->envname("PLIMSOLL_WEBHOOK_REQUIRE_MODEL_METADATA");
  cmd->add_flag("--deny-partial-batch", c.policy.deny_partial_batch,
                "Deny when the KV pool holds fewer full sequences than --max-batch-size (default: warn)")
      ->envname("PLIMSOLL_WEBHOOK_DENY_PARTIAL_BATCH");
  return [f] { return run(*f); };
}

}  // namespace plimsoll::cli
