// One table of kernels per ISA level (scalar, AVX2, AVX-512, AMX): matmul's row,
// tile and panel kernels, the element-wise ops with ISA paths and attention.
// dispatch.cpp checks the CPU's features once (cpu_has), picks the level
// (kernels.h: active_isa / set_isa) and builds each level's table on first use;
// matmul.cpp, ops.cpp and attention.cpp call through active_table(). Adding an
// ISA is adding a table.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "kernels/codecs.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

// One matmul kernel of a level and when it runs: its dtype's batches in `tokens` (the
// first row of the table whose dtype and range take a call runs it). Exactly one of
// panel, tile, gemv is set.
struct KernelRow {
  Isa isa = Isa::kScalar;  // the level whose table holds it
  DType dtype = DType::kF32;
  BatchRange tokens;
  const PanelKernel* panel = nullptr;
  const TileKernel* tile = nullptr;
  GemvFn gemv = nullptr;  // one token over many rows
};

struct IsaTable {
  // ---- matmul (matmul.cpp): the kernel rows in order (dispatch.cpp builds each level's from
  // kernel_rows.h: panels, then gemvs, then tiles), then the row kernels, which cover every
  // dtype and batch
  std::vector<KernelRow> kernel_rows;
  const RowKernels* rows = nullptr;
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
// The first of the table's kernel rows for dtype whose batch range takes n_tokens on rows
// of cols columns; null: the row kernels run it.
const KernelRow* kernel_row_for(const IsaTable& table, DType dtype, int64_t n_tokens, int64_t cols);
// The table's row that runs panel kernel k; null: none.
const KernelRow* panel_row(const IsaTable& table, const PanelKernel& k);

}  // namespace plimsoll::kernels
