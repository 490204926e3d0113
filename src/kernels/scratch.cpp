// scratch: the per-thread matmul buffers (scratch.h).
#include "kernels/scratch.h"

#include "kernels/layout_bytes.h"

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

// The largest weight panel of any level (layout_bytes.h): AMX-INT8's, the AMX K-quants', or
// AMX-BF16's panel group. The AVX-512 broadcast panels (64 B per column), the AVX2 panels
// (48 rows: 102 B per column quantized, 192 B per column float; K-quants 4 x 384 B per 256
// columns) and the NEON panels fit within these; isa_table_test holds every kernel row of this
// CPU's levels (panel_bytes) to it.
int64_t panel_scratch_bytes(int64_t cols) {
  const int64_t chunks = (cols + 31) / 32;
  return std::max({(cols / kQK) * kAmxInt8PanelBytesPerBlock, (cols / kQKK + 1) * kAmxKQuantPanelBytesPerBlock256,
                   kAmxBf16GroupBytes, kAmxBf16GroupPanels * chunks * kAmxBf16ChunkBytes});
}

void reserve_panel_scratch(int64_t cols) { panel_scratch(static_cast<size_t>(panel_scratch_bytes(cols))); }

}  // namespace plimsoll::kernels
