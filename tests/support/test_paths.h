// Where tests find the shared models and the built binary (set by CTest).
#pragma once

#include <string>

namespace plimsoll::testing {

// ../shared beside the repo (read-only); env PLIMSOLL_SHARED_DIR overrides.
std::string shared_dir();
// ../shared/models/stories260K/<file>
std::string stories_path(const std::string& file);
// The plimsoll executable under test (env PLIMSOLL_BINARY).
std::string plimsoll_binary();
// A fresh temporary directory for one test (removed by the OS's tmp cleanup).
std::string make_temp_dir();
// Whole file as a string ("" when missing).
std::string read_file(const std::string& path);
// Writes `text` to `path`, creating its parent directories (fake /proc and cgroup trees).
void write_file(const std::string& path, const std::string& text);

}  // namespace plimsoll::testing
