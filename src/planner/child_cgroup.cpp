// Child memory cgroups (v1 or v2) found with the budget's own cgroup walk;
// the C++ twin of tests/system/memcg.py for the ramp.
#include "planner/child_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "memory/memory_budget.h"

namespace plimsoll::planner {
namespace {

bool write_file(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

Result<ChildCgroup> ChildCgroup::create(const std::string& name, int64_t limit_bytes) {
  int version = 0;
  PLIMSOLL_ASSIGN(std::optional<std::string> parent, find_memory_cgroup_dir({}, &version));
  if (!parent) return make_error(ErrorCode::kUnsupported, "no memory cgroup controller is mounted");
  const std::string dir = *parent + "/" + name + "-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return make_error(ErrorCode::kIo, "cannot create a cgroup under " + *parent + " (" + std::strerror(errno) + ")");
  }
  ChildCgroup cg(dir, version);
  const std::string limit = std::to_string(limit_bytes);
  const bool ok = version == 2 ? write_file(dir + "/memory.max", limit)
                               : write_file(dir + "/memory.limit_in_bytes", limit);
  if (!ok) return make_error(ErrorCode::kIo, dir + ": cannot set the memory limit");
  if (version == 2 && exists(dir + "/memory.swap.max")) write_file(dir + "/memory.swap.max", "0");
  if (version == 1 && exists(dir + "/memory.memsw.limit_in_bytes")) write_file(dir + "/memory.memsw.limit_in_bytes", limit);
  return cg;
}

ChildCgroup::ChildCgroup(ChildCgroup&& o) noexcept : dir_(std::move(o.dir_)), version_(o.version_) { o.dir_.clear(); }

ChildCgroup::~ChildCgroup() {
  if (dir_.empty()) return;
  for (int i = 0; i < 50 && ::rmdir(dir_.c_str()) != 0 && errno == EBUSY; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int64_t ChildCgroup::peak_bytes() const {
  const std::string v = read_file(dir_ + (version_ == 2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  return v.empty() ? 0 : std::stoll(v);
}

int64_t ChildCgroup::oom_kills() const {
  std::istringstream in(read_file(dir_ + (version_ == 2 ? "/memory.events" : "/memory.oom_control")));
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "oom_kill") return value;
  }
  return 0;
}

std::string child_cgroup_unavailable_reason() {
  auto cg = ChildCgroup::create("plimsoll-probe", int64_t{1} << 30);
  return cg.ok() ? "" : cg.error().message;
}

}  // namespace plimsoll::planner
