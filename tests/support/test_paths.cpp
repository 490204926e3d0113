// Test path helpers.
#include "test_paths.h"

#include "test_locations.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace plimsoll::testing {

std::string shared_dir() {
  if (const char* env = std::getenv("PLIMSOLL_SHARED_DIR")) return env;
  return PLIMSOLL_TEST_SHARED_DIR;
}

std::string stories_path(const std::string& file) {
  const char* env = std::getenv("PLIMSOLL_STORIES_DIR");
  return std::string(env ? env : PLIMSOLL_TEST_STORIES_DIR) + "/" + file;
}

std::string source_dir() { return PLIMSOLL_TEST_SOURCE_DIR; }

std::string plimsoll_binary() {
  if (const char* env = std::getenv("PLIMSOLL_BINARY")) return env;
  return PLIMSOLL_TEST_BINARY;
}

namespace {

// The directories make_temp_dir created, removed when the test process exits
// (not by a child forked from it, which exits with its own copy of the list).
class TempDirs {
 public:
  ~TempDirs() {
    if (getpid() != owner_) return;
    std::error_code ignored;
    for (const std::string& dir : dirs_) std::filesystem::remove_all(dir, ignored);
  }
  void add(std::string dir) {
    std::lock_guard<std::mutex> lock(mutex_);
    dirs_.push_back(std::move(dir));
  }

 private:
  const pid_t owner_ = getpid();
  std::mutex mutex_;
  std::vector<std::string> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string make_temp_dir() {
  std::string tmpl = "/tmp/plimsoll-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) return "/tmp";
  temp_dirs().add(tmpl);
  return tmpl;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace plimsoll::testing
