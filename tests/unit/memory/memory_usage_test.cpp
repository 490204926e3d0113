#include "memory/memory_usage.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/bytes.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;

using testing::write_file;

// A v1 memory.stat as the kernel writes it (local and hierarchical figures).
constexpr const char* kV1Stat =
    "cache 52428800\nrss 73400320\nrss_huge 0\nmapped_file 1048576\n"
    "inactive_anon 0\nactive_anon 73400320\ninactive_file 10485760\nactive_file 41943040\n"
    "hierarchical_memory_limit 536870912\n"
    "total_cache 62914560\ntotal_rss 83886080\ntotal_inactive_file 20971520\ntotal_active_file 41943040\n";
// v2: one set of figures, hierarchical already.
constexpr const char* kV2Stat =
    "anon 83886080\nfile 62914560\nkernel_stack 327680\nactive_anon 83886080\ninactive_anon 0\n"
    "active_file 41943040\ninactive_file 20971520\nunevictable 0\n";

TEST(MemoryUsage, StatValueMatchesWholeKeysOnly) {
  EXPECT_EQ(memory_stat_value(kV1Stat, "inactive_file"), 10 * kMiB);
  EXPECT_EQ(memory_stat_value(kV1Stat, "total_inactive_file"), 20 * kMiB);
  EXPECT_EQ(memory_stat_value(kV1Stat, "rss"), 70 * kMiB);  // not rss_huge
  EXPECT_EQ(memory_stat_value(kV1Stat, "file"), -1);
  EXPECT_EQ(memory_stat_value("", "rss"), -1);
  EXPECT_EQ(memory_stat_value("rss x\n", "rss"), -1);
  EXPECT_EQ(memory_stat_value("rss 7", "rss"), 7);  // no final newline
}

TEST(MemoryUsage, V1WorkingSetTakesTheHierarchysInactiveFile) {
  auto ws = cgroup_working_set_bytes("146800640\n", kV1Stat, 1);
  ASSERT_TRUE(ws.ok()) << ws.error().message;
  EXPECT_EQ(*ws, 146800640 - 20 * kMiB);
  // A kernel without total_ figures: the local one.
  auto local = cgroup_working_set_bytes("146800640\n", "inactive_file 1048576\n", 1);
  ASSERT_TRUE(local.ok());
  EXPECT_EQ(*local, 146800640 - kMiB);
}

TEST(MemoryUsage, V2WorkingSetAndItsErrors) {
  auto ws = cgroup_working_set_bytes("146800640\n", kV2Stat, 2);
  ASSERT_TRUE(ws.ok());
  EXPECT_EQ(*ws, 146800640 - 20 * kMiB);
  auto floor = cgroup_working_set_bytes("1000\n", kV2Stat, 2);
  ASSERT_TRUE(floor.ok());
  EXPECT_EQ(*floor, 0);  // never below zero
  EXPECT_FALSE(cgroup_working_set_bytes("max\n", kV2Stat, 2).ok());
  auto no_stat = cgroup_working_set_bytes("1000\n", "anon 5\n", 2);
  ASSERT_FALSE(no_stat.ok());
  EXPECT_NE(no_stat.error().message.find("inactive_file"), std::string::npos);
}

TEST(MemoryUsage, ReadsACgroupDirectory) {
  const fs::path dir = testing::make_temp_dir();
  write_file(dir / "v1/memory.usage_in_bytes", "146800640\n");
  write_file(dir / "v1/memory.stat", kV1Stat);
  write_file(dir / "v2/memory.current", "104857600\n");
  write_file(dir / "v2/memory.stat", kV2Stat);
  UsageSource v1{(dir / "v1").string(), 1};
  auto a = v1.read();
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(*a, 146800640 - 20 * kMiB);
  EXPECT_NE(v1.description().find("memory.usage_in_bytes - total_inactive_file"), std::string::npos);
  UsageSource v2{(dir / "v2").string(), 2};
  auto b = v2.read();
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(*b, 80 * kMiB);
  UsageSource gone{(dir / "gone").string(), 2};
  auto c = gone.read();
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("memory.current"), std::string::npos);
  fs::remove_all(dir);
}

TEST(MemoryUsage, RssFallbackParsesStatus) {
  const fs::path dir = testing::make_temp_dir();
  write_file(dir / "status", "Name:\tplimsoll\nVmPeak:\t  900000 kB\nVmHWM:\t  300000 kB\nVmRSS:\t  204800 kB\n");
  UsageSource rss;
  rss.status_path = (dir / "status").string();
  auto r = rss.read();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 200 * kMiB);
  EXPECT_NE(rss.description().find("RSS"), std::string::npos);
  rss.status_path = (dir / "missing").string();
  EXPECT_FALSE(rss.read().ok());
  fs::remove_all(dir);
  // This process has a resident set.
  auto self = UsageSource{}.read();
  ASSERT_TRUE(self.ok());
  EXPECT_GT(*self, 0);
}

TEST(MemoryUsage, SourceFollowsWhereTheLimitCameFrom) {
  MemoryBudget from_cgroup;
  from_cgroup.cgroup_dir = "/sys/fs/cgroup/memory/x";
  from_cgroup.cgroup_version = 1;
  const UsageSource a = usage_source_for(from_cgroup);
  EXPECT_EQ(a.cgroup_dir, "/sys/fs/cgroup/memory/x");
  EXPECT_EQ(a.cgroup_version, 1);
  MemoryBudget from_flag;  // --memory-limit or physical memory: the process's own RSS
  from_flag.source = "--memory-limit";
  EXPECT_EQ(usage_source_for(from_flag).cgroup_dir, "");
}

}  // namespace
}  // namespace plimsoll
