#include "memory/memory_budget.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/bytes.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;

using testing::write_file;

// A fake /proc + /sys/fs/cgroup tree under a temp dir.
struct FakeTree {
  fs::path dir = testing::make_temp_dir();
  CgroupPaths paths() const {
    CgroupPaths p;
    p.proc_self_cgroup = (dir / "proc/self/cgroup").string();
    p.proc_self_mountinfo = (dir / "proc/self/mountinfo").string();
    p.proc_meminfo = (dir / "proc/meminfo").string();
    p.root = (dir / "root").string();
    return p;
  }
  FakeTree() { write_file(dir / "proc/meminfo", "MemTotal:       24000000 kB\nMemFree: 1 kB\n"); }
  ~FakeTree() { fs::remove_all(dir); }
};

constexpr const char* kV2Mountinfo =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
constexpr const char* kV1Mountinfo =
    "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";

TEST(MemoryBudget, CgroupV2LeafLimit) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  write_file(t.dir / "proc/self/mountinfo", kV2Mountinfo);
  write_file(t.dir / "root/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  write_file(t.dir / "root/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "12884901888\n");
  write_file(t.dir / "root/sys/fs/cgroup/kubepods/pod1/memory.max", "max\n");
  write_file(t.dir / "root/sys/fs/cgroup/kubepods/memory.max", "max\n");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->has_value());
  EXPECT_EQ((*r)->limit_bytes, 12 * kGiB);
  EXPECT_EQ((*r)->version, 2);
  EXPECT_NE((*r)->file.find("ctr/memory.max"), std::string::npos);
}

TEST(MemoryBudget, NestedParentLimitIsTighter) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "0::/a/b/c\n");
  write_file(t.dir / "proc/self/mountinfo", kV2Mountinfo);
  write_file(t.dir / "root/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  write_file(t.dir / "root/sys/fs/cgroup/a/b/c/memory.max", "max\n");
  write_file(t.dir / "root/sys/fs/cgroup/a/b/memory.max", "1073741824\n");
  write_file(t.dir / "root/sys/fs/cgroup/a/memory.max", "2147483648\n");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->limit_bytes, kGiB);
  EXPECT_NE((*r)->file.find("/a/b/memory.max"), std::string::npos);
  // The cgroup that sets the limit (the backstop reads its usage), not our leaf.
  EXPECT_EQ((*r)->dir, (t.dir / "root/sys/fs/cgroup/a/b").string());
}

TEST(MemoryBudget, V2UnlimitedAllTheWayUp) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "0::/x\n");
  write_file(t.dir / "proc/self/mountinfo", kV2Mountinfo);
  write_file(t.dir / "root/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  write_file(t.dir / "root/sys/fs/cgroup/x/memory.max", "max\n");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
  auto b = resolve_memory_budget(std::nullopt, 0.9, t.paths());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->limit_bytes, 24000000LL * 1024);
  EXPECT_NE(b->source.find("physical"), std::string::npos);
  EXPECT_EQ(b->cgroup_dir, "");
  EXPECT_EQ(b->cgroup_version, 0);
}

TEST(MemoryBudget, CgroupV1WithHugeUnlimitedParent) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "5:cpu:/\n4:memory:/docker/abc\n0::/\n");
  write_file(t.dir / "proc/self/mountinfo", kV1Mountinfo);
  write_file(t.dir / "root/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "268435456\n");
  write_file(t.dir / "root/sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "9223372036854771712\n");
  write_file(t.dir / "root/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  auto b = resolve_memory_budget(std::nullopt, 0.5, t.paths());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->limit_bytes, 256 * kMiB);
  EXPECT_EQ(b->cgroup_dir, (t.dir / "root/sys/fs/cgroup/memory/docker/abc").string());
  EXPECT_EQ(b->cgroup_version, 1);
  EXPECT_EQ(b->budget_bytes, 128 * kMiB);
  EXPECT_NE(b->source.find("cgroup v1"), std::string::npos);
}

TEST(MemoryBudget, NamespacedContainerSeesItsCgroupAsTheMountRoot) {
  FakeTree t;  // /proc/self/cgroup says /kubepods/x but only the mount root has the files
  write_file(t.dir / "proc/self/cgroup", "0::/kubepods/x\n");
  write_file(t.dir / "proc/self/mountinfo", kV2Mountinfo);
  write_file(t.dir / "root/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
  write_file(t.dir / "root/sys/fs/cgroup/memory.max", "536870912\n");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->limit_bytes, 512 * kMiB);
}

TEST(MemoryBudget, FlagWinsAndFractionIsChecked) {
  FakeTree t;
  auto b = resolve_memory_budget(1000, 0.9, t.paths());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->limit_bytes, 1000);
  EXPECT_EQ(b->budget_bytes, 900);
  EXPECT_EQ(b->source, "--memory-limit");
  auto bad = resolve_memory_budget(1000, 1.5, t.paths());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--memory-fraction"), std::string::npos);
  EXPECT_FALSE(resolve_memory_budget(-5, 0.9, t.paths()).ok());
}

TEST(MemoryBudget, HybridHostUsesV1MemoryNotTheEmptyV2Hierarchy) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "4:memory:/job\n0::/\n");
  write_file(t.dir / "proc/self/mountinfo",
             std::string(kV1Mountinfo) +
                 "36 31 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  write_file(t.dir / "root/sys/fs/cgroup/unified/cgroup.controllers", "\n");
  write_file(t.dir / "root/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "1048576\n");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok() && r->has_value());
  EXPECT_EQ((*r)->version, 1);
  EXPECT_EQ((*r)->limit_bytes, kMiB);
}

TEST(MemoryBudget, NoCgroupAtAll) {
  FakeTree t;
  write_file(t.dir / "proc/self/cgroup", "");
  write_file(t.dir / "proc/self/mountinfo", "");
  auto r = read_cgroup_memory_limit(t.paths());
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->has_value());
}

// A real memory cgroup made under our own: a child process moved into it
// must find the limit we set. Skipped (with the reason) where the machine
// gives no writable memory cgroup.
TEST(MemoryBudget, RealCgroupCreatedByTheTest) {
  int version = 0;
  auto dir = find_memory_cgroup_dir({}, &version);
  if (!dir.ok() || !dir->has_value()) GTEST_SKIP() << "no memory cgroup on this machine";
  const fs::path child = fs::path(**dir) / ("plimsoll-budget-test-" + std::to_string(getpid()));
  if (::mkdir(child.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cannot create a cgroup under " << **dir << " (not root, or read-only)";
  }
  const char* limit_file = version == 2 ? "memory.max" : "memory.limit_in_bytes";
  {
    std::ofstream(child / limit_file) << (300 * kMiB);
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    std::ofstream(child / "cgroup.procs") << getpid();
    auto r = read_cgroup_memory_limit();
    const long long v = (r.ok() && r->has_value()) ? (*r)->limit_bytes : -1;
    if (::write(fds[1], &v, sizeof v) != sizeof v) _exit(2);
    _exit(0);
  }
  long long seen = -2;
  ASSERT_EQ(::read(fds[0], &seen, sizeof seen), static_cast<ssize_t>(sizeof seen));
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  close(fds[1]);
  ::rmdir(child.c_str());
  EXPECT_EQ(seen, 300 * kMiB);
}

}  // namespace
}  // namespace plimsoll
