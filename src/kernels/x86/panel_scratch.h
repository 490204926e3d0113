// panel_scratch: the per-thread buffer a panel kernel (AMX, AVX-512 broadcast, NEON)
// unpacks or widens its weight panel into. Header-only with internal linkage,
// for the ISA-flagged kernel files (ISA-neutral: the arm/ files use it too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace plimsoll::kernels {

// A per-thread buffer of at least `bytes`, 64-byte aligned, for a weight panel
// unpacked once per call; it only grows.
static inline std::byte* panel_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + ((64 - addr % 64) % 64);
}

}  // namespace plimsoll::kernels
