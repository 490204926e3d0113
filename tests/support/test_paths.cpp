// Test path helpers.
#include "test_paths.h"

#include "test_locations.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string make_temp_dir() {
  std::string tmpl = "/tmp/plimsoll-test-XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  return dir ? std::string(dir) : std::string("/tmp");
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
