// The memory budget: how many bytes this process may use, found from, in
// order, the --memory-limit flag, the process's cgroup (v2 or v1), else the
// machine's physical memory; times a safety fraction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"

namespace plimsoll {

// Where to look; tests point these at a fake tree.
struct CgroupPaths {
  std::string proc_self_cgroup = "/proc/self/cgroup";
  std::string proc_self_mountinfo = "/proc/self/mountinfo";
  std::string proc_meminfo = "/proc/meminfo";
  std::string root;  // prefix prepended to every mount point found (fake trees)
};

struct CgroupLimit {
  int64_t limit_bytes = 0;  // the tightest limit on the way from our cgroup to the root
  std::string file;         // the file it was read from (e.g. .../memory.max)
  int version = 2;          // 1 or 2
  std::string dir;          // the cgroup that sets it (file's directory): its usage is what the limit bounds
};

// Values at or above this are "no limit" (v1 writes PAGE_COUNTER_MAX * page size).
inline constexpr int64_t kCgroupUnlimitedBytes = int64_t{1} << 62;

// The tightest memory limit on our cgroup path, or nullopt when there is none
// (no cgroup memory controller, or "max" / huge values all the way up).
Result<std::optional<CgroupLimit>> read_cgroup_memory_limit(const CgroupPaths& paths = {});
// The cgroup directory of this process for the memory controller (nullopt when none).
Result<std::optional<std::string>> find_memory_cgroup_dir(const CgroupPaths& paths = {},
                                                          int* version = nullptr);
// MemTotal from /proc/meminfo, in bytes.
Result<int64_t> read_physical_memory_bytes(const CgroupPaths& paths = {});

struct MemoryBudget {
  int64_t limit_bytes = 0;   // the limit found
  std::string source;        // "--memory-limit", "cgroup v2 (/sys/fs/cgroup/.../memory.max)", "physical memory"
  double fraction = 0.9;     // --memory-fraction
  int64_t budget_bytes = 0;  // limit_bytes * fraction: what the plan may spend
  std::string cgroup_dir;    // when the limit came from a cgroup: that cgroup's directory, else ""
  int cgroup_version = 0;    // 1 or 2 with cgroup_dir, else 0
};

// flag_bytes: --memory-limit when given. fraction must be in (0, 1].
Result<MemoryBudget> resolve_memory_budget(std::optional<int64_t> flag_bytes, double fraction,
                                           const CgroupPaths& paths = {});

}  // namespace plimsoll
