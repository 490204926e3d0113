// A request's tenant: its API key's (tenant keys are accepted keys, kept as
// SHA-256), else a trusted X-Tenant header's, else the default; every route's
// items carry it.
#include <gtest/gtest.h>

#include "api_fixture.h"
#include "core/sha256.h"

namespace plimsoll::testing {
namespace {

class TenantsTest : public ApiTest {
 protected:
  void with_tenants(bool trust_header, std::string api_key = "") {
    restart([&](api::ApiConfig& c) {
      c.api_key = api_key;
      c.tenant_names = {"default", "batch", "web"};
      c.tenant_key_sha256 = {{sha256_hex("batch-key"), 1}, {sha256_hex("web-key"), 2}};
      c.trust_tenant_header = trust_header;
    });
  }
  int status_of(const httplib::Headers& headers, const std::string& path = "/generate") {
    const json body = path == "/generate" ? json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}
                                          : json{{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                                 {"max_tokens", 2}};
    const auto r = post(path, body.dump(), headers);
    return r ? r->status : -1;
  }
  int32_t tenant_of(const httplib::Headers& headers, const std::string& path = "/generate") {
    if (status_of(headers, path) != 200) return -1;
    const auto items = service_.last_items();
    return items.empty() ? -1 : items[0].tenant;
  }
};

TEST_F(TenantsTest, TheKeyNamesTheTenantOnEveryRoute) {
  with_tenants(false);
  for (const std::string path : {"/generate", "/v1/chat/completions"}) {
    EXPECT_EQ(tenant_of({{"Authorization", "Bearer batch-key"}}, path), 1) << path;
    EXPECT_EQ(tenant_of({{"Authorization", "Bearer web-key"}}, path), 2) << path;
    EXPECT_EQ(status_of({{"Authorization", "Bearer wrong"}}, path), 401) << path;
    EXPECT_EQ(status_of({}, path), 401) << path << ": with tenant keys, a key is required";
  }
  // Untrusted, the header changes nothing.
  EXPECT_EQ(tenant_of({{"Authorization", "Bearer batch-key"}, {"X-Tenant", "web"}}), 1);
}

TEST_F(TenantsTest, TheGlobalKeyIsTheDefaultTenant) {
  with_tenants(false, "global");
  EXPECT_EQ(tenant_of({{"Authorization", "Bearer global"}}), 0);
  EXPECT_EQ(tenant_of({{"Authorization", "Bearer web-key"}}), 2);
}

TEST_F(TenantsTest, ATrustedHeaderNamesTheTenantWhenTheKeyDoesNot) {
  restart([](api::ApiConfig& c) {
    c.tenant_names = {"default", "batch", "web"};
    c.trust_tenant_header = true;
  });
  EXPECT_EQ(tenant_of({{"X-Tenant", "web"}}), 2);
  EXPECT_EQ(tenant_of({{"X-Tenant", "batch"}}), 1);
  EXPECT_EQ(tenant_of({{"X-Tenant", "nobody"}}), 0) << "an unknown name is the default tenant";
  EXPECT_EQ(tenant_of({}), 0);
  restart([](api::ApiConfig& c) { c.tenant_names = {"default", "batch", "web"}; });
  EXPECT_EQ(tenant_of({{"X-Tenant", "web"}}), 0) << "without --trust-tenant-header the header is ignored";
}

TEST_F(TenantsTest, PriorityIsReadOnEveryRouteAndCheckedAsAnInt32) {
  const auto sent = [&](const std::string& path, const json& body) {
    const auto r = post(path, body.dump());
    EXPECT_TRUE(r && r->status == 200) << (r ? r->body : "no response");
    const auto items = service_.last_items();
    return items.empty() ? -99 : items[0].priority;
  };
  EXPECT_EQ(sent("/generate", {{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}, {"priority", 3}}}}), 3);
  EXPECT_EQ(sent("/generate", {{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}), 0);
  EXPECT_EQ(sent("/v1/completions", {{"prompt", "hi"}, {"max_tokens", 2}, {"priority", -5}}), -5);
  EXPECT_EQ(sent("/v1/chat/completions",
                 {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 2}, {"priority", 1}}),
            1);
  const auto big = post("/v1/completions", json{{"prompt", "hi"}, {"priority", 1LL << 40}}.dump());
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 400) << big->body;
  EXPECT_NE(big->body.find("`priority` must be a 32-bit integer"), std::string::npos) << big->body;
}

}  // namespace
}  // namespace plimsoll::testing
