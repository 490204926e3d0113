// Pieces shared by the AMX kernels (tiles_amx.cpp: INT8, tiles_amx_bf16.cpp:
// BF16): the tile configuration record and the per-thread panel scratch (and
// transpose16, from transpose_avx512.h). Include only from files compiled with the
// AVX-512 + AMX flags (functions are static: no shared inline copies leave an
// ISA-flagged file).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/x86/transpose_avx512.h"

namespace plimsoll::kernels {

// LDTILECFG's 64-byte record, palette 1: tile i has rows[i] rows of colsb[i] bytes.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// A per-thread buffer of at least `bytes`, 64-byte aligned, for a weight panel
// unpacked once per call; it only grows.
static inline std::byte* amx_panel_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + ((64 - addr % 64) % 64);
}

}  // namespace plimsoll::kernels
