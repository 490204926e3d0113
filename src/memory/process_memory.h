// The process's own memory figures from /proc: resident set now and at its
// peak (VmRSS, VmHWM), for logs, metrics and the plan-versus-actual checks.
#pragma once

#include <cstdint>
#include <string>

namespace plimsoll {

struct ProcessMemory {
  int64_t resident_bytes = 0;       // VmRSS
  int64_t peak_resident_bytes = 0;  // VmHWM
};

// Reads /proc/self/status (or `status_path`); zeros when unreadable.
ProcessMemory read_process_memory(const std::string& status_path = "/proc/self/status");

}  // namespace plimsoll
