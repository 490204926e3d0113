// The tenants file: fields read, the default tenant first, errors naming the
// file, the field and the rule.
#include "sched/tenants_file.h"

#include <gtest/gtest.h>

namespace plimsoll::sched {
namespace {

const std::string kHashA(64, 'a');
const std::string kHashB = std::string(63, 'b') + "0";

TEST(TenantsFile, ReadsFieldsAndPutsTheDefaultFirst) {
  const auto f = parse_tenants(R"({"default_tenant": "web", "tenants": [
      {"name": "batch", "weight": 1, "api_key_sha256": [")" + kHashA + R"("], "max_sequences": 8,
       "max_kv_share": 0.5, "max_queued_tokens": 100000},
      {"name": "web", "weight": 3, "api_key_sha256": [")" + kHashB + R"("]}]})", "t.json");
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_EQ(f->tenants.size(), 2u);
  EXPECT_EQ(f->tenants[0].name, "web");
  EXPECT_EQ(f->tenants[0].weight, 3.0);
  EXPECT_EQ(f->tenants[1].name, "batch");
  EXPECT_EQ(f->tenants[1].max_sequences, 8);
  EXPECT_EQ(f->tenants[1].max_kv_share, 0.5);
  EXPECT_EQ(f->tenants[1].max_queued_tokens, 100000);
  ASSERT_EQ(f->key_sha256.size(), 2u);
  for (const auto& [hash, t] : f->key_sha256) EXPECT_EQ(t, hash == kHashA ? 1 : 0);
}

TEST(TenantsFile, WithoutADefaultOneIsAdded) {
  const auto f = parse_tenants(R"({"tenants": [{"name": "batch", "weight": 0.5}]})", "t.json");
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->tenants.size(), 2u);
  EXPECT_EQ(f->tenants[0].name, "default");
  EXPECT_EQ(f->tenants[0].weight, 1.0);
  EXPECT_EQ(f->tenants[1].name, "batch");
  const auto named = parse_tenants(R"({"tenants": [{"name": "x"}, {"name": "default", "weight": 2}]})", "t.json");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->tenants[0].name, "default");
  EXPECT_EQ(named->tenants[0].weight, 2.0);
}

TEST(TenantsFile, ErrorsNameTheFileTheFieldAndTheRule) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[1]", "t.json: : must be an object"},
      {R"({"tenants": {}})", "t.json: /tenants: required, an array"},
      {R"({"tenants": [], "extra": 1})", "t.json: /extra: unknown field"},
      {R"({"tenants": [{"weight": 1}]})", "t.json: /tenants/0/name: required"},
      {R"({"tenants": [{"name": "a b"}]})", "t.json: /tenants/0/name: letters, digits"},
      {R"({"tenants": [{"name": "a"}, {"name": "a"}]})", "t.json: /tenants/1/name: \"a\" is named twice"},
      {R"({"tenants": [{"name": "a", "weight": 0}]})", "t.json: /tenants/0/weight: must be a number > 0"},
      {R"({"tenants": [{"name": "a", "max_kv_share": 1.5}]})", "t.json: /tenants/0/max_kv_share: must be a number in (0, 1]"},
      {R"({"tenants": [{"name": "a", "max_sequences": -1}]})", "t.json: /tenants/0/max_sequences: must be an integer >= 0"},
      {R"({"tenants": [{"name": "a", "api_key_sha256": ["secret"]}]})", "t.json: /tenants/0/api_key_sha256/0: must be 64 lower-case hex"},
      {R"({"tenants": [{"name": "a", "api_key": "secret"}]})", "t.json: /tenants/0/api_key: unknown field"},
      {R"({"default_tenant": "b", "tenants": [{"name": "a"}]})", "t.json: /default_tenant: \"b\" names no tenant"},
  };
  for (const auto& [text, start] : cases) {
    const auto f = parse_tenants(text, "t.json");
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_EQ(f.error().message.rfind(start, 0), 0u) << text << " -> " << f.error().message;
  }
  const auto missing = load_tenants_file("/nonexistent/tenants.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/tenants.json"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll::sched
