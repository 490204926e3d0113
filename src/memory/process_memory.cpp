// /proc/self/status parsing for VmRSS and VmHWM.
#include "memory/process_memory.h"

#include <fstream>
#include <sstream>

namespace plimsoll {

ProcessMemory read_process_memory(const std::string& status_path) {
  ProcessMemory m;
  std::ifstream in(status_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    int64_t kib = 0;
    ss >> key >> kib;
    if (key == "VmRSS:") m.resident_bytes = kib * 1024;
    if (key == "VmHWM:") m.peak_resident_bytes = kib * 1024;
  }
  return m;
}

}  // namespace plimsoll
