// Reading the backstop's figure: a cgroup's usage less its inactive file
// pages, or VmRSS. Files are read with open/read into a stack buffer: the
// watcher calls this every few tens of milliseconds.
#include "memory/memory_usage.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <span>

#include "memory/process_memory.h"

namespace plimsoll {
namespace {

constexpr size_t kStatBufferBytes = 16 * 1024;  // memory.stat is 1-5 KB; inactive_file is near its top

// The first `buffer.size()` bytes of `path`.
Result<std::string_view> read_small_file(const std::string& path, std::span<char> buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::kIo, "cannot open " + path);
  size_t used = 0;
  while (used < buffer.size()) {
    const ssize_t n = ::read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0) {
      ::close(fd);
      return make_error(ErrorCode::kIo, "cannot read " + path);
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  return std::string_view(buffer.data(), used);
}

// A non-negative decimal at the start of `text` (after spaces), or -1.
int64_t leading_number(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  int64_t v = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data() || v < 0) return -1;
  return v;
}

std::string join(const std::string& dir, const char* file) {
  return !dir.empty() && dir.back() == '/' ? dir + file : dir + "/" + file;
}

}  // namespace

int64_t memory_stat_value(std::string_view memory_stat, std::string_view key) {
  while (!memory_stat.empty()) {
    const size_t eol = memory_stat.find('\n');
    const std::string_view line = memory_stat.substr(0, eol);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      return leading_number(line.substr(key.size()));
    }
    if (eol == std::string_view::npos) break;
    memory_stat.remove_prefix(eol + 1);
  }
  return -1;
}

Result<int64_t> cgroup_working_set_bytes(std::string_view usage_text, std::string_view memory_stat, int version) {
  const int64_t usage = leading_number(usage_text);
  if (usage < 0) {
    return make_error(ErrorCode::kInvalidFile, "memory usage is not a number: \"" +
                                                   std::string(usage_text.substr(0, 40)) + "\"");
  }
  int64_t inactive = version == 1 ? memory_stat_value(memory_stat, "total_inactive_file") : -1;
  if (inactive < 0) inactive = memory_stat_value(memory_stat, "inactive_file");
  if (inactive < 0) return make_error(ErrorCode::kInvalidFile, "memory.stat has no inactive_file line");
  return usage > inactive ? usage - inactive : 0;
}

std::string UsageSource::description() const {
  if (cgroup_dir.empty()) return "process RSS (" + status_path + " VmRSS)";
  return "cgroup v" + std::to_string(cgroup_version) + " " + cgroup_dir + ": " +
         (cgroup_version == 2 ? "memory.current - inactive_file" : "memory.usage_in_bytes - total_inactive_file");
}

Result<int64_t> UsageSource::read() const {
  if (cgroup_dir.empty()) {
    const int64_t rss = read_process_memory(status_path).resident_bytes;
    if (rss <= 0) return make_error(ErrorCode::kIo, "no VmRSS in " + status_path);
    return rss;
  }
  std::array<char, 64> usage_buffer;  // one decimal number
  std::array<char, kStatBufferBytes> stat_buffer;
  const char* usage_file = cgroup_version == 2 ? "memory.current" : "memory.usage_in_bytes";
  PLIMSOLL_ASSIGN(std::string_view usage, read_small_file(join(cgroup_dir, usage_file), usage_buffer));
  PLIMSOLL_ASSIGN(std::string_view stat, read_small_file(join(cgroup_dir, "memory.stat"), stat_buffer));
  return cgroup_working_set_bytes(usage, stat, cgroup_version);
}

UsageSource usage_source_for(const MemoryBudget& budget) {
  UsageSource s;
  if (!budget.cgroup_dir.empty()) {
    s.cgroup_dir = budget.cgroup_dir;
    s.cgroup_version = budget.cgroup_version;
  }
  return s;
}

}  // namespace plimsoll
