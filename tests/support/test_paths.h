// Where tests find the shared models and the built binary (set by CTest).
#pragma once

#include <string>

namespace plimsoll::testing {

// ../shared beside the repo (read-only); env PLIMSOLL_SHARED_DIR overrides.
std::string shared_dir();
// stories260K's <file> (stories260K.gguf, stories260K.bin, tok512.bin, greedy_from_bos_256_steps.txt):
// build/<config>/stories260K/, the shipped models/stories260K/ and its llama2.c checkpoint
// (env PLIMSOLL_STORIES_DIR overrides).
std::string stories_path(const std::string& file);
// The repository's root (tests/data/... are below it).
std::string source_dir();
// The plimsoll executable under test (env PLIMSOLL_BINARY).
std::string plimsoll_binary();
// A fresh temporary directory for one test, removed with its contents when the
// test process exits.
std::string make_temp_dir();
// Whole file as a string ("" when missing).
std::string read_file(const std::string& path);
// Writes `text` to `path`, creating its parent directories (fake /proc and cgroup trees).
void write_file(const std::string& path, const std::string& text);

}  // namespace plimsoll::testing
