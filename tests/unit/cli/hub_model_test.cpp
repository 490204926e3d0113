// `plimsoll inspect -m org/name` end to end: the binary downloads from the hub
// stand-in named by HF_ENDPOINT into HF_HUB_CACHE, then works offline.
#include <gtest/gtest.h>

#include "../formats/hf_folder.h"
#include "../hub/hub_stand_in.h"
#include "run_command.h"
#include "test_paths.h"

namespace plimsoll::testing {
namespace {

std::string plimsoll_with(const std::string& env) {
  return "env -u HF_TOKEN -u HF_HUB_OFFLINE -u HF_HOME " + env + " " + plimsoll_binary();
}

void serve_tiny_gpt2(StandInScript& script) {
  const std::string dir = make_temp_dir();
  write_hf_folder(dir, kGpt2Config, gpt2_tensors());
  script.files = read_folder(dir);
}

TEST(HubModel, InspectResolvesARepoIdThroughTheHubThenTheCache) {
  StandInScript script;
  serve_tiny_gpt2(script);
  const std::string cache = make_temp_dir();
  {
    HubStandIn hub(script);
    auto r = run_command(plimsoll_with("HF_ENDPOINT=" + hub.url() + " HF_HUB_CACHE=" + cache) +
                         " inspect -m org/tiny 2>&1");
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("architecture: gpt2"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("org/tiny model.safetensors: "), std::string::npos) << "no progress line: " << r.out;
  }
  // The stand-in is gone: the cache alone serves, with --offline or without.
  auto r = run_command(plimsoll_with("HF_ENDPOINT=http://127.0.0.1:1 HF_HUB_CACHE=" + cache) +
                       " inspect org/tiny --offline 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("format: Hugging Face safetensors"), std::string::npos) << r.out;
  r = run_command(plimsoll_with("HF_HUB_OFFLINE=1 HF_HUB_CACHE=" + make_temp_dir()) + " inspect -m org/tiny 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("[error] org/tiny@main: offline"), std::string::npos) << r.out;
}

// An https:// endpoint goes through TLS with the system's certificate store,
// which SSL_CERT_FILE replaces (a self-signed stand-in is refused without it).
TEST(HubModel, HttpsEndpointsVerifyTheHubsCertificate) {
  const std::string tls = make_temp_dir();
  auto made = run_command("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
                          "-subj /CN=hub -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " + tls +
                          "/hub.key -out " + tls + "/hub.crt 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out;
  StandInScript script;
  serve_tiny_gpt2(script);
  HubStandIn hub(script, {tls + "/hub.crt", tls + "/hub.key"});
  ASSERT_EQ(hub.url().rfind("https://", 0), 0u);
  const std::string env = "HF_ENDPOINT=" + hub.url() + " HF_HUB_CACHE=" + make_temp_dir();
  auto r = run_command(plimsoll_with(env + " SSL_CERT_FILE=/nonexistent") + " inspect -m org/tiny 2>&1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("TLS certificate failed verification"), std::string::npos) << r.out;
  r = run_command(plimsoll_with(env + " SSL_CERT_FILE=" + tls + "/hub.crt") + " inspect -m org/tiny 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("architecture: gpt2"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace plimsoll::testing
