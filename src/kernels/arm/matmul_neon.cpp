// Plain NEON (the AArch64 baseline, no extra flags) row and panel kernels, for
// CPUs without the dotprod extension. dot4 emulates SDOT: SMULL/SMULL2 give the
// 16 int16 products, SADDLP widens adjacent pairs into int32 and ADDP adds
// adjacent int32 pairs of both halves, so lane j gets bytes 4j..4j+3 (5
// instructions where SDOT is one). Products of int8 in [-127, 127] (Q8_0) or
// [-8, 7] x [-127, 127] (Q4_0) fit int16, their pair sums too.
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

inline int32x4_t dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
  const int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(a), vget_low_s8(b)));
  const int32x4_t hi = vpaddlq_s16(vmull_high_s8(a, b));
  return vaddq_s32(acc, vpaddq_s32(lo, hi));
}

#include "kernels/arm/neon_matmul.inc"

}  // namespace

const RowKernels& neon_row_kernels() {
  static const RowKernels kernels = make_row_kernels();
  return kernels;
}

const PanelKernels& neon_panel_kernels() {
  static const PanelKernels kernels = make_panels();
  return kernels;
}

}  // namespace plimsoll::kernels
