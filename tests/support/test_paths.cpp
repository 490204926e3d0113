// Test path helpers.
#include "test_paths.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace plimsoll::testing {

std::string shared_dir() {
  if (const char* env = std::getenv("PLIMSOLL_SHARED_DIR")) return env;
  return PLIMSOLL_DEFAULT_SHARED_DIR;
}

std::string stories_path(const std::string& file) {
  return shared_dir() + "/models/stories260K/" + file;
}

std::string plimsoll_binary() {
  if (const char* env = std::getenv("PLIMSOLL_BINARY")) return env;
  return PLIMSOLL_DEFAULT_BINARY;
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
