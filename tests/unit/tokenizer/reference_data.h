// Test helper: where the tokenizer fixtures live (tests/data/hf_tokenizer)
// and reading their JSON Lines files.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_paths.h"

namespace plimsoll::testing {

inline const std::filesystem::path kTestsDir = std::filesystem::path(source_dir()) / "tests";
inline const std::filesystem::path kHfDataDir = kTestsDir / "data" / "hf_tokenizer";

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

}  // namespace plimsoll::testing
