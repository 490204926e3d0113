// The memory figure the backstop watches: the working set of the cgroup whose
// limit the budget came from (usage less inactive file pages, as the kubelet
// and cAdvisor count it), or the process's RSS where the limit is not a
// cgroup's (--memory-limit, physical memory).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "memory/memory_budget.h"

namespace plimsoll {

// One reading, in bytes; an error when the file cannot be read or parsed.
using UsageReader = std::function<Result<int64_t>()>;

// Where the figure comes from: a cgroup directory (version 1 or 2) or, with
// an empty dir, /proc/self/status's VmRSS.
struct UsageSource {
  std::string cgroup_dir;  // "" = process RSS
  int cgroup_version = 0;  // 1 or 2 with cgroup_dir
  std::string status_path = "/proc/self/status";

  // "cgroup v1 /sys/fs/cgroup/memory/x: memory.usage_in_bytes - total_inactive_file",
  // "process RSS (/proc/self/status VmRSS)".
  std::string description() const;
  // Reads the figure now: two small files for a cgroup, one for RSS.
  Result<int64_t> read() const;
};

// The cgroup the budget's limit came from, else the process RSS.
UsageSource usage_source_for(const MemoryBudget& budget);

// The value of `key` in a memory.stat text ("key value" lines), or -1 when absent.
int64_t memory_stat_value(std::string_view memory_stat, std::string_view key);
// usage (memory.current / memory.usage_in_bytes) less the inactive file pages
// of memory.stat (v1: total_inactive_file, the hierarchy's, else inactive_file;
// v2: inactive_file, hierarchical already), never below 0.
Result<int64_t> cgroup_working_set_bytes(std::string_view usage_text, std::string_view memory_stat, int version);

}  // namespace plimsoll
