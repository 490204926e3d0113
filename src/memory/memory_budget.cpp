// Memory-limit discovery: /proc/self/cgroup + /proc/self/mountinfo to find
// our memory cgroup, then the tightest limit from it up to the mount root.
#include "memory/memory_budget.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/bytes.h"

namespace plimsoll {
namespace {

std::optional<std::string> read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) out.push_back(part);
  return out;
}

struct Mount {
  std::string root;         // the path inside the cgroup hierarchy that is mounted
  std::string mount_point;  // where it is mounted
};

// Finds the cgroup2 mount (version 2) or the v1 mount carrying the memory controller.
std::optional<Mount> find_mount(const std::string& mountinfo_path, int version) {
  std::ifstream in(mountinfo_path);
  std::string line;
  while (std::getline(in, line)) {
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    const std::vector<std::string> left = split(line.substr(0, dash), ' ');
    const std::vector<std::string> right = split(line.substr(dash + 3), ' ');
    if (left.size() < 5 || right.size() < 3) continue;
    const std::string& fstype = right[0];
    if (version == 2 && fstype == "cgroup2") return Mount{left[3], left[4]};
    if (version == 1 && fstype == "cgroup") {
      for (const std::string& opt : split(right[2], ',')) {
        if (opt == "memory") return Mount{left[3], left[4]};
      }
    }
  }
  return std::nullopt;
}

// Our path in the hierarchy: "0::/x" for v2, "N:...memory...:/x" for v1.
std::optional<std::string> cgroup_path(const std::string& proc_self_cgroup, int version) {
  std::ifstream in(proc_self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (version == 2 && line.substr(0, a) == "0" && controllers.empty()) return path;
    if (version == 1) {
      for (const std::string& c : split(controllers, ',')) {
        if (c == "memory") return path;
      }
    }
  }
  return std::nullopt;
}

std::string join_path(const std::string& a, const std::string& b) {
  if (b.empty() || b == "/") return a;
  if (!a.empty() && a.back() == '/') return a + (b.front() == '/' ? b.substr(1) : b);
  return a + (b.front() == '/' ? b : "/" + b);
}

// Parses a limit file's content: "max" or a number; nullopt = no limit.
std::optional<int64_t> parse_limit(const std::string& text) {
  if (text == "max") return std::nullopt;
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == 0 || v < 0 || v >= kCgroupUnlimitedBytes) return std::nullopt;
    return static_cast<int64_t>(v);
  } catch (...) {
    return std::nullopt;  // overflowing numbers are v1's "unlimited" too
  }
}

bool has_memory_controller(const std::string& v2_mount_point) {
  const std::optional<std::string> line = read_first_line(join_path(v2_mount_point, "cgroup.controllers"));
  if (!line) return false;
  for (const std::string& c : split(*line, ' ')) {
    if (c == "memory") return true;
  }
  return false;
}

}  // namespace

Result<std::optional<std::string>> find_memory_cgroup_dir(const CgroupPaths& paths, int* version) {
  for (int v : {2, 1}) {
    const std::optional<Mount> mount = find_mount(paths.proc_self_mountinfo, v);
    const std::optional<std::string> path = cgroup_path(paths.proc_self_cgroup, v);
    if (!mount || !path) continue;
    // Hybrid hosts mount a v2 hierarchy without the memory controller: skip it.
    if (v == 2 && !has_memory_controller(paths.root + mount->mount_point)) continue;
    // Our path is relative to the hierarchy root; the mount shows mount->root of it.
    std::string rel = *path;
    if (mount->root != "/" && rel.rfind(mount->root, 0) == 0) rel = rel.substr(mount->root.size());
    std::string dir = join_path(paths.root + mount->mount_point, rel);
    std::ifstream probe(join_path(dir, v == 2 ? "memory.max" : "memory.limit_in_bytes"));
    if (!probe) dir = paths.root + mount->mount_point;  // namespaced container: our cgroup is the mount
    if (version) *version = v;
    return std::optional<std::string>(dir);
  }
  return std::optional<std::string>();
}

Result<std::optional<CgroupLimit>> read_cgroup_memory_limit(const CgroupPaths& paths) {
  int version = 2;
  PLIMSOLL_ASSIGN(std::optional<std::string> dir, find_memory_cgroup_dir(paths, &version));
  if (!dir) return std::optional<CgroupLimit>();
  const std::optional<Mount> mount = find_mount(paths.proc_self_mountinfo, version);
  const std::string top = paths.root + (mount ? mount->mount_point : std::string("/"));
  const char* file = version == 2 ? "memory.max" : "memory.limit_in_bytes";
  std::optional<CgroupLimit> best;
  // Walk from our cgroup up to the mount point: a parent's limit binds us too.
  std::string d = *dir;
  for (;;) {
    const std::string f = join_path(d, file);
    if (auto line = read_first_line(f)) {
      if (auto limit = parse_limit(*line)) {
        if (!best || *limit < best->limit_bytes) best = CgroupLimit{*limit, f, version, d};
      }
    }
    if (d.size() <= top.size()) break;
    const size_t slash = d.find_last_of('/');
    if (slash == std::string::npos || slash < top.size()) break;
    d = d.substr(0, slash);
  }
  return best;
}

Result<int64_t> read_physical_memory_bytes(const CgroupPaths& paths) {
  std::ifstream in(paths.proc_meminfo);
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit) {
    if (key == "MemTotal:") return kib * 1024;
  }
  return make_error(ErrorCode::kIo, paths.proc_meminfo + ": no MemTotal line");
}

Result<MemoryBudget> resolve_memory_budget(std::optional<int64_t> flag_bytes, double fraction,
                                           const CgroupPaths& paths) {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--memory-fraction must be > 0 and <= 1, got " + std::to_string(fraction));
  }
  MemoryBudget b;
  b.fraction = fraction;
  if (flag_bytes) {
    if (*flag_bytes <= 0) {
      return make_error(ErrorCode::kInvalidArgument, "--memory-limit must be positive");
    }
    b.limit_bytes = *flag_bytes;
    b.source = "--memory-limit";
  } else {
    PLIMSOLL_ASSIGN(std::optional<CgroupLimit> cg, read_cgroup_memory_limit(paths));
    PLIMSOLL_ASSIGN(int64_t physical, read_physical_memory_bytes(paths));
    if (cg && cg->limit_bytes < physical) {
      b.limit_bytes = cg->limit_bytes;
      b.source = "cgroup v" + std::to_string(cg->version) + " (" + cg->file + ")";
      b.cgroup_dir = cg->dir;
      b.cgroup_version = cg->version;
    } else {
      b.limit_bytes = physical;
      b.source = "physical memory (" + paths.proc_meminfo + ")";
    }
  }
  b.budget_bytes = static_cast<int64_t>(static_cast<double>(b.limit_bytes) * fraction);
  return b;
}

}  // namespace plimsoll
