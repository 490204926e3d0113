// The byte sizes of the kernels' activation and weight-panel layouts that the plan's scratch
// bound counts (matmul_scratch_bytes, panel_scratch_bytes): declared once here, for every ISA
// level, and each kernel file static_asserts its layout against its figure. The bound covers
// all levels, not only this CPU's: the planner and the admission webhook plan (through
// plan_serve_memory) for a machine other than their own, so the plan must not depend on it.
#pragma once

#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

// the row kernels' activations (matmul.cpp prepare_acts): a Q8_K block per kQKK elements
// (Q8_0's blocks take fewer bytes)
inline constexpr int64_t kRowActBytesPerBlock256 = sizeof(BlockQ8K);  // 292
// AVX-512 tiles (x86/tiles_avx512.cpp): an ActPair per two Q8_0 blocks
inline constexpr int64_t kAvx512TileActPairBytes = 192;
// AMX-INT8 (x86/tiles_amx.cpp): a token tile's int8 values and f32 scale per block (ActBlock),
// and a weight panel's, per block of kAmxRows rows
inline constexpr int64_t kAmxInt8ActBlockBytes = (kQK + 4) * kAmxTokens;  // 576
inline constexpr int64_t kAmxInt8PanelBytesPerBlock = (kQK + 4) * kAmxRows;  // 576
// AMX K-quants (x86/tiles_amx_kquants.cpp): the largest weight panel per super-block (Q6_K's
// three pieces)
inline constexpr int64_t kAmxKQuantPanelBytesPerBlock256 = 12672;
// AMX-BF16 (x86/tiles_amx_bf16.cpp): hi and lo bf16 of 16 rows (or tokens) x 32 columns
// (ChunkPair); its weight panels come in groups of kAmxBf16GroupPanels..16 panels, as many as
// fit kAmxBf16GroupBytes
inline constexpr int64_t kAmxBf16ChunkBytes = 2 * 2 * 16 * 32;  // 2048
inline constexpr int64_t kAmxBf16GroupBytes = int64_t{1} << 20;
inline constexpr int64_t kAmxBf16GroupPanels = 4;
// AVX2 panels (x86/panels_avx2.cpp): a token's ActGroup16 per 8 Q8_0 blocks (the plain build's
// Q8_0; ActGroup is smaller)
inline constexpr int64_t kAvx2ActGroupBytes = 544;

}  // namespace plimsoll::kernels
