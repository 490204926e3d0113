// Each ISA level's matmul kernel rows (isa_table.h's KernelRow): a row per kernel and dtype,
// taking range(dtype)'s batches, appended in the order matmul tries them. dispatch.cpp's table
// of each level calls these; kernel_rows.cpp holds every level's batch sizes (a level's are
// used only on its architecture).
#pragma once

#include "kernels/isa_table.h"

namespace plimsoll::kernels {

using RangeOf = BatchRange (*)(DType);

// A row for each dtype k has a panel (tile) kernel for.
void add_panels(IsaTable* t, Isa isa, const PanelKernels& k, RangeOf range);
void add_tiles(IsaTable* t, Isa isa, const TileKernels& k, RangeOf range);
// One token: the gemv for each dtype the table's row kernels have one for.
void add_gemvs(IsaTable* t, Isa isa);

// The batch sizes of each level's kernels (kernel_rows.cpp says why).
BatchRange avx2_panel_range(DType d);
BatchRange avx2_vnni_panel_range(DType d);
BatchRange avx512_float_panel_range(DType d);
BatchRange avx512_ymm_panel_range(DType d);
BatchRange avx512_tile_range(DType d);
BatchRange any_batch(DType d);
BatchRange amx_int8_range(DType d);
BatchRange amx_bf16_range(DType d);
BatchRange neon_panel_range(DType d);

}  // namespace plimsoll::kernels
