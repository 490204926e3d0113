// Non-x86 builds: the x86 tables fall back to the scalar twins (set_isa
// refuses the x86 paths there anyway, since cpu_has reports false).
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

const RowKernels& avx2_row_kernels() { return scalar_row_kernels(); }
const RowKernels& avx512_row_kernels() { return scalar_row_kernels(); }
const TileKernels& avx512_tile_kernels() {
  static const TileKernels none;
  return none;
}
const TileKernels& amx_tile_kernels() { return avx512_tile_kernels(); }
const PanelKernels& amx_kernels() {
  static const PanelKernels none;
  return none;
}
const PanelKernels& amx_bf16_kernels() { return amx_kernels(); }
const PanelKernels& avx512_panel_kernels() { return amx_kernels(); }
const PanelKernels& avx2_panel_kernels() { return amx_kernels(); }

}  // namespace plimsoll::kernels
