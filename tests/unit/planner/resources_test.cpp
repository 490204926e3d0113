// Kubernetes resources blocks in the shapes people have them: the block, a
// container, a whole Deployment; JSON or YAML; quantities in binary and decimal units.
#include "planner/resources.h"

#include <gtest/gtest.h>

#include "core/bytes.h"

namespace plimsoll::planner {
namespace {

TEST(Resources, ReadsABareBlock) {
  auto r = parse_resources(R"({"limits":{"memory":"12Gi","cpu":"4"},"requests":{"memory":"8Gi"}})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->memory_limit_bytes, 12 * kGiB);
  EXPECT_EQ(r->memory_request_bytes, 8 * kGiB);
  EXPECT_EQ(r->cpu_limit, "4");
  EXPECT_EQ(r->where, "resources");
}

TEST(Resources, FindsTheBlockInADeploymentYaml) {
  auto r = parse_resources(R"(apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
      - name: plimsoll
        image: plimsoll:latest
        resources:
          limits:
            memory: 1500M
)");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->memory_limit_bytes, 1'500'000'000);
  EXPECT_EQ(r->where, "spec.template.spec.containers[0].resources");
}

TEST(Resources, ReadsABlockInYaml) {
  auto r = parse_resources("resources:\n  limits:\n    memory: 256Mi\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->memory_limit_bytes, 256 * kMiB);
}

TEST(Resources, NamesWhatIsMissingOrWrong) {
  auto none = parse_resources(R"({"requests":{"memory":"1Gi"}})");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("limits.memory"), std::string::npos);
  auto bad = parse_resources(R"({"limits":{"memory":"lots"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("resources.limits.memory"), std::string::npos);
  EXPECT_FALSE(parse_resources("{not json").ok());
  EXPECT_FALSE(read_resources_file("/nonexistent/deployment.yaml").ok());
}

}  // namespace
}  // namespace plimsoll::planner
