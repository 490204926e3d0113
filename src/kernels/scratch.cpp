// scratch: the per-thread matmul buffers (scratch.h).
#include "kernels/scratch.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace plimsoll::kernels {
namespace {

std::byte* aligned_64(std::vector<std::byte>& buffer, size_t bytes) {
  if (buffer.size() < bytes + 64) buffer.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((64 - addr % 64) % 64);
}

}  // namespace

std::byte* thread_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  return aligned_64(scratch, bytes);
}

std::byte* panel_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  return aligned_64(scratch, bytes);
}

int64_t panel_scratch_bytes(int64_t cols) {
  const int64_t chunks = (cols + 31) / 32;
  return std::max({(cols / 32) * 576, (cols / 256 + 1) * 12672, int64_t{1} << 20, 4 * chunks * 2048});
}

void reserve_panel_scratch(int64_t cols) { panel_scratch(static_cast<size_t>(panel_scratch_bytes(cols))); }

}  // namespace plimsoll::kernels
