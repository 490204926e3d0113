// The decision: allowed, denied with the numbers, objects that do not run
// Plimsoll, no limits (warning), and settings read from args, env and the downward API.
#include <gtest/gtest.h>

#include "core/bytes.h"
#include "webhook/admission_policy.h"
#include "workload_fixture.h"

namespace plimsoll::webhook {
namespace {

using testing::deployment;
using testing::json;
using testing::memory;
using testing::serve_container;

json env_2048() { return json::array({{{"name", "MAX_TOTAL_TOKENS"}, {"value", "2048"}}}); }

bool has_warning(const Decision& d, const std::string& text) {
  for (const std::string& w : d.warnings) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(AdmissionPolicy, AllowsAPlanThatFitsTheRequest) {
  const Decision d = decide(deployment(serve_container(env_2048(), memory("24Gi", "24Gi"))), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_TRUE(d.allowed) << d.message;
  ASSERT_EQ(d.verdicts.size(), 1u);
  ASSERT_TRUE(d.verdicts[0].plan);
  EXPECT_EQ(d.verdicts[0].checked_bytes, 24 * kGiB);
  EXPECT_LE(d.verdicts[0].plan->planned_bytes(), 24 * kGiB);
  EXPECT_EQ(d.verdicts[0].plan->max_total_tokens, 2048);
  EXPECT_EQ(d.audit_annotations.at("plimsoll.planned-bytes"), std::to_string(d.verdicts[0].plan->planned_bytes()));
}

TEST(AdmissionPolicy, DeniesTheIncidentWithTheNumbers) {
  // 12 GiB for a 7B model at its full 4,096-token context: weights ~6.7 GiB,
  // and one sequence of f32 KV is 4 GiB, over the 10.8 GiB budget.
  const json f32_kv = json::array({"--kv-cache-dtype", "f32"});
  const Decision d = decide(deployment(serve_container(json::array(), memory("12Gi", "12Gi"), f32_kv)), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_FALSE(d.allowed);
  for (const char* part : {"container plimsoll", "memory request 12.00 GiB", "budget 10.80 GiB", "weights 6.",
                           "KV for one sequence of 4096 tokens 4.00 GiB", "the smallest memory request that fits"}) {
    EXPECT_NE(d.message.find(part), std::string::npos) << part << " in: " << d.message;
  }
  // serve's default f16 KV holds that sequence in 2 GiB: the same pod fits.
  const Decision f16 = decide(deployment(serve_container(json::array(), memory("12Gi", "12Gi"))), {});
  EXPECT_TRUE(f16.allowed) << f16.message;
  // and under 8 GiB it does not, with the f16 figure.
  const Decision small = decide(deployment(serve_container(json::array(), memory("8Gi", "8Gi"))), {});
  EXPECT_FALSE(small.allowed);
  EXPECT_NE(small.message.find("KV for one sequence of 4096 tokens 2.00 GiB"), std::string::npos) << small.message;
}

TEST(AdmissionPolicy, RejectsAnUnknownKvCacheDtype) {
  const json args = json::array({"--kv-cache-dtype", "q8_0"});
  const Decision d = decide(deployment(serve_container(env_2048(), memory("24Gi", "24Gi"), args)), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("--kv-cache-dtype"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("use f16 or f32"), std::string::npos) << d.message;
}

TEST(AdmissionPolicy, DeniesMaxBatchTotalTokensBeyondThePool) {
  json env = env_2048();
  env.push_back({{"name", "MAX_BATCH_TOTAL_TOKENS"}, {"value", "16384"}});
  const Decision d = decide(deployment(serve_container(env, memory("12Gi", "16Gi"))), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("MAX_BATCH_TOTAL_TOKENS 16384"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("raise it to at least"), std::string::npos) << d.message;
}

TEST(AdmissionPolicy, ChecksAgainstTheLimitWhenConfigured) {
  const json object = deployment(serve_container(env_2048(), memory("4Gi", "24Gi")));
  EXPECT_FALSE(decide(object, {}).allowed);
  PolicyConfig by_limit;
  by_limit.check_against = PolicyConfig::CheckAgainst::kLimit;
  const Decision d = decide(object, by_limit);
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_EQ(d.verdicts.at(0).checked_bytes, 24 * kGiB);
}

TEST(AdmissionPolicy, PassesObjectsThatDoNotRunPlimsoll) {
  json nginx = {{"name", "web"}, {"image", "nginx:1.25"}, {"resources", memory("64Mi", "")}};
  const Decision d = decide(deployment(nginx, json::object()), {});
  EXPECT_FALSE(d.reviewed);
  EXPECT_TRUE(d.allowed);
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_TRUE(decide(json{{"kind", "ConfigMap"}, {"data", {{"a", "b"}}}}, {}).allowed);
  // `plimsoll generate` is not a server.
  json gen = {{"name", "gen"}, {"image", "plimsoll:0.1"}, {"command", {"plimsoll", "generate"}}};
  EXPECT_FALSE(decide(deployment(gen), {}).reviewed);
}

TEST(AdmissionPolicy, WarnsOnASpecWithoutLimits) {
  const Decision d = decide(deployment(serve_container(env_2048(), memory("24Gi", ""))), {});
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_TRUE(has_warning(d, "no memory limit")) << testing::json(d.warnings).dump();
  const Decision none = decide(deployment(serve_container(env_2048(), json::object())), {});
  EXPECT_TRUE(none.allowed);
  EXPECT_TRUE(has_warning(none, "no memory request or limit"));
}

TEST(AdmissionPolicy, ArgsOverrideEnvAndDownwardApiGivesTheLimit) {
  json env = json::array({{{"name", "MAX_TOTAL_TOKENS"}, {"value", "4096"}},
                          {{"name", "PLIMSOLL_MEMORY_LIMIT"},
                           {"valueFrom", {{"resourceFieldRef", {{"resource", "limits.memory"}}}}}}});
  json c = serve_container(env, memory("12Gi", "12Gi"), {"--max-total-tokens", "1024", "--max-batch-size=8"});
  c["command"] = {"plimsoll", "serve"};
  const Decision d = decide(deployment(c), {});
  EXPECT_TRUE(d.allowed) << d.message;
  ASSERT_TRUE(d.verdicts.at(0).plan);
  EXPECT_EQ(d.verdicts[0].plan->max_total_tokens, 1024);
  EXPECT_EQ(d.verdicts[0].plan->workspace.step_seqs, 8);
}

TEST(AdmissionPolicy, DeniesAMemoryLimitFlagAboveTheContainerLimit) {
  json env = env_2048();
  env.push_back({{"name", "PLIMSOLL_MEMORY_LIMIT"}, {"value", "64Gi"}});
  const Decision d = decide(deployment(serve_container(env, memory("24Gi", "24Gi"))), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("above the container's memory limit 24.00 GiB"), std::string::npos) << d.message;
}

TEST(AdmissionPolicy, WarnsOrDeniesWithoutModelAnnotations) {
  const json object = deployment(serve_container(env_2048(), memory("12Gi", "12Gi")), json::object());
  const Decision warn = decide(object, {});
  EXPECT_TRUE(warn.allowed);
  EXPECT_TRUE(has_warning(warn, "declares no model"));
  PolicyConfig strict;
  strict.require_model_metadata = true;
  EXPECT_FALSE(decide(object, strict).allowed);
}

TEST(AdmissionPolicy, DeniesMalformedSettingsAndAnnotationsWithTheirNames) {
  json env = json::array({{{"name", "MAX_TOTAL_TOKENS"}, {"value", "lots"}}});
  Decision d = decide(deployment(serve_container(env, memory("12Gi", "12Gi"))), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("MAX_TOTAL_TOKENS: 'lots' is not an integer"), std::string::npos) << d.message;
  json a = testing::llama7b_annotations();
  a["plimsoll.dev/model-layers"] = "many";
  d = decide(deployment(serve_container(env_2048(), memory("12Gi", "12Gi")), a), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("plimsoll.dev/model-layers"), std::string::npos) << d.message;
}

TEST(AdmissionPolicy, WarnsWhenThePoolHoldsLessThanAFullBatch) {
  const json object = deployment(serve_container(env_2048(), memory("12Gi", "12Gi")));
  const Decision d = decide(object, {});
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_TRUE(has_warning(d, "fewer than MAX_BATCH_SIZE 64"));
  PolicyConfig strict;
  strict.deny_partial_batch = true;
  EXPECT_FALSE(decide(object, strict).allowed);
}

TEST(AdmissionPolicy, ReadsStatefulSetsAndShellCommands) {
  json c = {{"name", "srv"},
            {"image", "debian:12"},
            {"command", {"sh", "-c", "exec /opt/bin/plimsoll serve -m /models/m.gguf --max-total-tokens 512"}},
            {"resources", memory("10Gi", "10Gi")}};
  const Decision d = decide(deployment(c, testing::llama7b_annotations(), "StatefulSet"), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_EQ(d.verdicts.at(0).plan->max_total_tokens, 512);
}

}  // namespace
}  // namespace plimsoll::webhook
