// The tenants file through the webhook: a ConfigMap labelled plimsoll.dev/tenants
// read with serve's parser, and a workload's plimsoll.dev/tenants annotation
// checked against its plan (caps that can never start a request serve accepts).
#include <gtest/gtest.h>

#include "planner/tenant_shares.h"
#include "sched/tenants_file.h"
#include "webhook/admission_policy.h"
#include "webhook/admission_review.h"
#include "workload_fixture.h"

namespace plimsoll::webhook {
namespace {

using testing::deployment;
using testing::json;
using testing::memory;
using testing::serve_container;

const char* kGood = R"({"default_tenant": "web", "tenants": [{"name": "web", "weight": 3},
  {"name": "batch", "weight": 1, "max_kv_share": 0.5, "max_sequences": 4}]})";

json config_map(const json& data, bool labelled = true) {
  json meta = {{"name", "plimsoll-tenants"}, {"namespace", "inference"}};
  if (labelled) meta["labels"] = {{"plimsoll.dev/tenants", "true"}};
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", meta}, {"data", data}};
}

// A 7B server with MAX_TOTAL_TOKENS 2048 in 24 GiB, passing --tenants; `tenants`: the annotation ("" : none).
json tenant_workload(const std::string& tenants, bool flag = true) {
  json annotations = testing::llama7b_annotations();
  if (!tenants.empty()) annotations["plimsoll.dev/tenants"] = tenants;
  const json env = json::array({{{"name", "MAX_TOTAL_TOKENS"}, {"value", "2048"}}});
  const json args = flag ? json::array({"--tenants", "/etc/plimsoll/tenants.json"}) : json::array();
  return deployment(serve_container(env, memory("24Gi", "24Gi"), args), annotations);
}

bool has_warning(const Decision& d, const std::string& text) {
  for (const std::string& w : d.warnings) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(TenantsConfigMap, DeniesABadFileWithTheParsersMessage) {
  const std::string bad = R"({"tenants": [{"name": "web", "weight": 0}]})";
  const Decision d = decide(config_map({{"tenants.json", bad}}), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_FALSE(d.allowed);
  const auto parsed = sched::parse_tenants(bad, "ConfigMap inference/plimsoll-tenants key tenants.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(d.message, parsed.error().message);
  EXPECT_EQ(d.message, "ConfigMap inference/plimsoll-tenants key tenants.json: /tenants/0/weight: must be a number > 0");
  const Decision typo = decide(config_map({{"tenants.json", R"({"tenants": [{"name": "web", "max_kv_shares": 0.5}]})"}}), {});
  EXPECT_FALSE(typo.allowed);
  EXPECT_NE(typo.message.find("/tenants/0/max_kv_shares: unknown field"), std::string::npos) << typo.message;
  EXPECT_NE(decide(config_map({{"tenants.json", "{"}}), {}).message.find("tenants.json: : not JSON"), std::string::npos);
}

TEST(TenantsConfigMap, AllowsAGoodFileAndRecordsItsTenants) {
  const Decision d = decide(config_map({{"tenants.json", kGood}}), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_TRUE(d.warnings.empty());
  EXPECT_EQ(d.audit_annotations.at("tenants"), "web,batch");  // the default first
}

TEST(TenantsConfigMap, DeniesTheLabelWithoutTheKeyAndPassesUnlabelledConfigMaps) {
  const Decision d = decide(config_map({{"tenants.yaml", kGood}}), {});
  EXPECT_FALSE(d.allowed);
  EXPECT_NE(d.message.find("no data key tenants.json"), std::string::npos) << d.message;
  const Decision other = decide(config_map({{"tenants.json", "not json"}}, /*labelled=*/false), {});
  EXPECT_FALSE(other.reviewed);
  EXPECT_TRUE(other.allowed);
}

TEST(TenantsConfigMap, AnswersAsAnAdmissionReview) {
  const json bad = config_map({{"tenants.json", R"({"tenants": [{"name": "a b"}]})"}});
  const auto request = parse_admission_review(testing::review(bad, "u-cm").dump());
  ASSERT_TRUE(request.ok());
  const json out = json::parse(admission_response(*request, decide(request->object, {})));
  EXPECT_EQ(out["response"]["uid"], "u-cm");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["message"],
            "ConfigMap inference/plimsoll-tenants key tenants.json: /tenants/0/name: letters, digits, '-', '_' and '.' "
            "only (it is a metrics label value)");
}

TEST(TenantsAnnotation, RecordsEachTenantsShareOfThePlan) {
  const Decision d = decide(tenant_workload(kGood), {});
  ASSERT_TRUE(d.allowed) << d.message;
  EXPECT_FALSE(has_warning(d, "tenant")) << json(d.warnings).dump();
  ASSERT_TRUE(d.verdicts.at(0).plan);
  const auto file = sched::parse_tenants(kGood, "x");
  ASSERT_TRUE(file.ok());
  const json want = planner::tenant_shares_json(planner::tenant_shares(*d.verdicts[0].plan, file->tenants));
  EXPECT_EQ(json::parse(d.audit_annotations.at("plimsoll.tenants")), want);
  EXPECT_EQ(want[1]["name"], "batch");
  EXPECT_GT(want[1]["sequences_at_cap"].get<int64_t>(), 0);
}

TEST(TenantsAnnotation, DeniesAKvShareBelowOneFullSequenceWithTheNumbers) {
  const Decision fits = decide(tenant_workload(kGood), {});
  ASSERT_TRUE(fits.verdicts.at(0).plan);
  const MemoryPlan& plan = *fits.verdicts[0].plan;
  ASSERT_GT(plan.blocks_per_full_sequence, 1);
  // A share whose cap holds one block less than a sequence of 2048 tokens.
  const int64_t cap = plan.blocks_per_full_sequence - 1;
  const double share = (static_cast<double>(cap) + 0.5) / static_cast<double>(plan.kv_blocks);
  const std::string tenants = R"({"tenants": [{"name": "default"}, {"name": "tiny", "max_kv_share": )" +
                              std::to_string(share) + "}]}";
  const Decision d = decide(tenant_workload(tenants), {});
  EXPECT_FALSE(d.allowed);
  for (const std::string& part :
       {std::string("container plimsoll: tenant \"tiny\": max_kv_share"),
        "of the plan's " + std::to_string(plan.kv_blocks) + " KV blocks caps it at " + std::to_string(cap) + " blocks",
        "fewer than the " + std::to_string(plan.blocks_per_full_sequence) + " blocks one sequence of 2048 tokens",
        std::string("raise its max_kv_share to at least")}) {
    EXPECT_NE(d.message.find(part), std::string::npos) << part << " in: " << d.message;
  }
  // At a share that holds a sequence, the same workload is allowed.
  const double enough = static_cast<double>(plan.blocks_per_full_sequence + 1) / static_cast<double>(plan.kv_blocks);
  const Decision ok = decide(tenant_workload(R"({"tenants": [{"name": "tiny", "max_kv_share": )" +
                                             std::to_string(enough) + "}]}"), {});
  EXPECT_TRUE(ok.allowed) << ok.message;
}

TEST(TenantsAnnotation, WarnsOnQueuedTokensBelowOneRequest) {
  const Decision d = decide(tenant_workload(R"({"tenants": [{"name": "default", "max_queued_tokens": 1000}]})"), {});
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_TRUE(has_warning(d, "max_queued_tokens 1000 is below one request of 2048 tokens")) << json(d.warnings).dump();
}

TEST(TenantsAnnotation, DeniesAFileServeWouldRefuse) {
  const Decision d = decide(tenant_workload(R"({"tenants": [{"name": "web", "max_kv_share": 2}]})"), {});
  EXPECT_TRUE(d.reviewed);
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.message, "annotation plimsoll.dev/tenants: /tenants/0/max_kv_share: must be a number in (0, 1]");
}

TEST(TenantsAnnotation, WarnsWhenTheFlagAndTheAnnotationDoNotGoTogether) {
  const Decision unchecked = decide(tenant_workload(""), {});
  EXPECT_TRUE(unchecked.allowed) << unchecked.message;
  EXPECT_TRUE(has_warning(unchecked, "--tenants /etc/plimsoll/tenants.json: no plimsoll.dev/tenants annotation"))
      << json(unchecked.warnings).dump();
  EXPECT_FALSE(unchecked.audit_annotations.count("plimsoll.tenants"));
  const Decision unused = decide(tenant_workload(kGood, /*flag=*/false), {});
  EXPECT_TRUE(unused.allowed) << unused.message;
  EXPECT_TRUE(has_warning(unused, "serve runs without --tenants")) << json(unused.warnings).dump();
}

TEST(TenantsAnnotation, NoTenantsNoChange) {
  const Decision d = decide(tenant_workload("", /*flag=*/false), {});
  EXPECT_TRUE(d.allowed) << d.message;
  EXPECT_FALSE(has_warning(d, "tenant")) << json(d.warnings).dump();
  EXPECT_EQ(d.warnings.size(), 1u) << json(d.warnings).dump();  // only the partial batch, as before
  EXPECT_FALSE(d.audit_annotations.count("plimsoll.tenants"));
  EXPECT_TRUE(d.audit_annotations.count("plimsoll.planned-bytes"));
}

}  // namespace
}  // namespace plimsoll::webhook
