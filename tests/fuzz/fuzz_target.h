// What a fuzz target tells the standalone driver (fuzz_driver.cpp) besides its
// LLVMFuzzerTestOneInput: its name, a small seed corpus, a dictionary of tokens
// the mutator inserts, and its byte budget. libFuzzer builds (PLIMSOLL_FUZZ=ON)
// compile the same files and ignore this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace plimsoll::fuzz {

struct TargetInfo {
  const char* name = "";
  std::vector<std::string> seeds;
  std::vector<std::string> dictionary;
  // Pairs the mutator wraps around a range, once or many times over.
  std::vector<std::pair<std::string, std::string>> nests;
  // Heap bytes live at the peak of one call (operator new minus delete, from
  // the call's start) may not exceed fixed + per_input_byte x input size.
  // Each target states why its numbers bound what the code under test keeps.
  int64_t budget_fixed_bytes = 0;
  int64_t budget_per_input_byte = 0;
  // Inputs the mutator makes stay at or under this many bytes.
  size_t max_input_bytes = 4096;
};

// Defined once per target.
const TargetInfo& target_info();

}  // namespace plimsoll::fuzz
