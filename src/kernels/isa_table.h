// One table of kernels per ISA level (scalar, AVX2, AVX-512, AMX): matmul's row,
// tile and panel kernels, the element-wise ops with ISA paths and attention.
// dispatch.cpp checks the CPU's features once (cpu_has), picks the level
// (kernels.h: active_isa / set_isa) and builds each level's table on first use;
// matmul.cpp, ops.cpp and attention.cpp call through active_table(). Adding an
// ISA is adding a table.
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/codecs.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

struct IsaTable {
  // ---- matmul (matmul.cpp): panels first (the first that takes the batch), then
  // tiles, then the row kernels, which cover every dtype
  const RowKernels* rows = nullptr;
  const TileKernels* tiles = nullptr;       // null: none
  const PanelKernels* panels[3] = {};       // tried in order; null: none
  // the row kernels' activations (Q8_0 for Q8_0/Q4_0 weights, Q8_K for K-quants), byte
  // for byte as the scalar codecs (the default)
  void (*quantize_q8_0)(const float* x, BlockQ8_0* y, int64_t n) = kernels::quantize_q8_0;
  void (*quantize_q8_k)(const float* x, BlockQ8K* y, int64_t n) = kernels::quantize_q8_k;
  // ---- element-wise ops (ops.cpp) and attention (attention.cpp)
  VecKernels vec;
};

// The table of an ISA level the CPU has (built on first use).
const IsaTable& isa_table(Isa isa);
// isa_table(active_isa())
const IsaTable& active_table();

}  // namespace plimsoll::kernels
