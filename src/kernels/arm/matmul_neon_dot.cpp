// NEON + dotprod row and panel kernels (built with -march=armv8.2-a+dotprod only;
// chosen at run time when the kernel reports HWCAP_ASIMDDP): dot4 is SDOT, one
// instruction for 16 int8 products summed into 4 int32 lanes.
#include <arm_neon.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/scratch.h"
#include "kernels/arm/neon_blocks.h"
#include "kernels/blocks.h"
#include "kernels/codecs.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }

#include "kernels/arm/neon_matmul.inc"

}  // namespace

const RowKernels& neon_dot_row_kernels() {
  static const RowKernels kernels = make_row_kernels();
  return kernels;
}

const PanelKernels& neon_dot_panel_kernels() {
  static const PanelKernels kernels = make_panels();
  return kernels;
}

}  // namespace plimsoll::kernels
