// End to end: `plimsoll webhook` with a self-signed certificate made by
// openssl, real AdmissionReview JSON over HTTPS on loopback, and a certificate swap.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "../cli/run_command.h"
#include "test_paths.h"
#include "workload_fixture.h"

extern char** environ;

namespace plimsoll::webhook {
namespace {

using testing::json;

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// A self-signed P-256 certificate for 127.0.0.1 with common name `cn`.
bool make_certificate(const std::string& dir, const std::string& name, const std::string& cn) {
  const std::string cmd = "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=" +
                          cn + " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + dir + "/" + name +
                          ".key -out " + dir + "/" + name + ".crt 2>&1";
  auto r = plimsoll::testing::run_command(cmd);
  return r.exit_code == 0;
}

class WebhookEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = plimsoll::testing::make_temp_dir();
    ASSERT_TRUE(make_certificate(dir_, "first", "plimsoll-webhook-1"));
    ASSERT_TRUE(make_certificate(dir_, "second", "plimsoll-webhook-2"));
    std::rename((dir_ + "/first.crt").c_str(), (dir_ + "/tls.crt").c_str());
    std::rename((dir_ + "/first.key").c_str(), (dir_ + "/tls.key").c_str());
    plimsoll::testing::run_command("cp " + dir_ + "/tls.crt " + dir_ + "/ca-first.crt");
    port_ = free_port();
    const std::string binary = plimsoll::testing::plimsoll_binary(), port = std::to_string(port_),
                      cert = dir_ + "/tls.crt", key = dir_ + "/tls.key";
    const char* argv[] = {binary.c_str(), "webhook", "--hostname", "127.0.0.1", "--port", port.c_str(),
                          "--tls-cert", cert.c_str(), "--tls-key", key.c_str(), nullptr};
    ASSERT_EQ(posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, const_cast<char**>(argv), environ), 0);
    ASSERT_TRUE(wait_healthy(dir_ + "/ca-first.crt")) << "plimsoll webhook did not answer /healthz";
  }

  void TearDown() override {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status;
  }

  std::unique_ptr<httplib::SSLClient> client(const std::string& ca) const {
    auto c = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    c->set_ca_cert_path(ca.c_str());
    c->enable_server_certificate_verification(true);
    c->set_connection_timeout(2, 0);
    return c;
  }

  bool wait_healthy(const std::string& ca) const {
    for (int i = 0; i < 100; ++i) {
      auto res = client(ca)->Get("/healthz");
      if (res && res->status == 200) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  json validate(const std::string& body, int want_status) const {
    auto res = client(dir_ + "/ca-first.crt")->Post("/validate", body, "application/json");
    EXPECT_TRUE(res) << httplib::to_string(res.error());
    if (!res) return {};
    EXPECT_EQ(res->status, want_status) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    return json::parse(res->body, nullptr, false);
  }

  std::string dir_;
  int port_ = 0;
  pid_t pid_ = 0;
};

TEST_F(WebhookEndToEnd, AnswersAllowedDeniedNonPlimsollAndMalformed) {
  const json env = json::array({{{"name", "MAX_TOTAL_TOKENS"}, {"value", "2048"}}});
  json out = validate(testing::review(testing::deployment(testing::serve_container(env, testing::memory("24Gi", "24Gi"))), "u-allowed").dump(), 200);
  EXPECT_EQ(out["response"]["uid"], "u-allowed");
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_TRUE(out["response"]["auditAnnotations"].contains("plimsoll.planned-bytes")) << out.dump();

  const json f32_kv = json::array({"--kv-cache-dtype", "f32"});
  out = validate(testing::review(testing::deployment(testing::serve_container(json::array(), testing::memory("12Gi", "12Gi"), f32_kv)), "u-denied").dump(), 200);
  EXPECT_EQ(out["response"]["uid"], "u-denied");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 403);
  const std::string message = out["response"]["status"]["message"];
  EXPECT_NE(message.find("memory request 12.00 GiB"), std::string::npos) << message;
  EXPECT_NE(message.find("KV for one sequence of 4096 tokens 4.00 GiB"), std::string::npos) << message;

  const json nginx = {{"name", "web"}, {"image", "nginx:1.25"}};
  out = validate(testing::review(testing::deployment(nginx, json::object()), "u-other").dump(), 200);
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_FALSE(out["response"].contains("warnings"));

  out = validate(testing::review(testing::deployment(testing::serve_container(env, testing::memory("24Gi", ""))), "u-warn").dump(), 200);
  EXPECT_EQ(out["response"]["allowed"], true);
  EXPECT_NE(out["response"]["warnings"].dump().find("no memory limit"), std::string::npos) << out.dump();

  for (const std::string bad : {"not json", "{}", R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"})",
                                R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":7}})"}) {
    out = validate(bad, 400);
    EXPECT_EQ(out["error_type"], "validation") << bad << " -> " << out.dump();
  }
  // A review that reads but whose object holds nonsense: denied with the field named, not a crash.
  out = validate(R"({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"x","object":)"
                 R"({"kind":"Deployment","spec":{"template":{"metadata":{"annotations":{"plimsoll.dev/model-dim":"8"}},)"
                 R"("spec":{"containers":[{"image":"plimsoll","env":[7,{"name":1}],"resources":{"limits":{"memory":["12Gi"]}}}]}}}}}})", 200);
  EXPECT_EQ(out["response"]["allowed"], false) << out.dump();
  EXPECT_NE(out["response"]["status"]["message"].dump().find("missing"), std::string::npos) << out.dump();
  auto res = client(dir_ + "/ca-first.crt")->Get("/nothing");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_NE(res->body.find("no route"), std::string::npos);
}

TEST_F(WebhookEndToEnd, ReviewsTenantsConfigMaps) {
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "tenants"}, {"namespace", "inference"}, {"labels", {{"plimsoll.dev/tenants", "true"}}}}},
             {"data", {{"tenants.json", R"({"tenants": [{"name": "web", "weight": -1}]})"}}}};
  json out = validate(testing::review(cm, "u-tenants-bad").dump(), 200);
  EXPECT_EQ(out["response"]["allowed"], false) << out.dump();
  EXPECT_EQ(out["response"]["status"]["message"],
            "ConfigMap inference/tenants key tenants.json: /tenants/0/weight: must be a number > 0");
  cm["data"]["tenants.json"] = R"({"tenants": [{"name": "web", "weight": 2}]})";
  out = validate(testing::review(cm, "u-tenants-good").dump(), 200);
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
  // The parser adds the default tenant (weight 1) when the file names none.
  EXPECT_EQ(out["response"]["auditAnnotations"]["tenants"], "default,web") << out.dump();
}

TEST_F(WebhookEndToEnd, ServesANewCertificateWhenTheFilesChange) {
  EXPECT_FALSE(client(dir_ + "/second.crt")->Get("/healthz")) << "the second CA must not verify the first cert";
  // Replace both files atomically, as the kubelet does for a Secret volume.
  std::rename((dir_ + "/second.key").c_str(), (dir_ + "/tls.key").c_str());
  plimsoll::testing::run_command("cp " + dir_ + "/second.crt " + dir_ + "/next.crt");
  std::rename((dir_ + "/next.crt").c_str(), (dir_ + "/tls.crt").c_str());
  bool switched = false;
  for (int i = 0; i < 50 && !switched; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto res = client(dir_ + "/second.crt")->Get("/healthz");
    switched = res && res->status == 200;
  }
  EXPECT_TRUE(switched) << "the server did not pick up the new certificate";
  EXPECT_FALSE(client(dir_ + "/ca-first.crt")->Get("/healthz")) << "the old certificate is still served";
}

}  // namespace
}  // namespace plimsoll::webhook
