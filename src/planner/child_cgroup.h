// A memory cgroup for one ramp step: created under this process's own memory
// cgroup with the deployment's limit, read for its peak and OOM kills, removed.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.h"

namespace plimsoll::planner {

class ChildCgroup {
 public:
  // Creates <own cgroup>/<name>-<pid> with memory limit `limit_bytes` (and no swap).
  static Result<ChildCgroup> create(const std::string& name, int64_t limit_bytes);
  ChildCgroup(ChildCgroup&& other) noexcept;
  ChildCgroup& operator=(ChildCgroup&&) = delete;
  ~ChildCgroup();

  const std::string& dir() const { return dir_; }
  int version() const { return version_; }
  std::string procs_file() const { return dir_ + "/cgroup.procs"; }
  // The kernel's high-water mark (v1 memory.max_usage_in_bytes, v2 memory.peak); 0 when none.
  int64_t peak_bytes() const;
  int64_t oom_kills() const;

 private:
  ChildCgroup(std::string dir, int version) : dir_(std::move(dir)), version_(version) {}
  std::string dir_;
  int version_ = 0;
};

// "" when a child memory cgroup can be created here, else why not.
std::string child_cgroup_unavailable_reason();

}  // namespace plimsoll::planner
