// Pieces shared by the AMX kernels (tiles_amx.cpp: INT8, tiles_amx_bf16.cpp:
// BF16): the tile configuration record (and panel_scratch, transpose16 from
// their headers). Include only from files compiled with the
// AVX-512 + AMX flags (functions are static: no shared inline copies leave an
// ISA-flagged file).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/scratch.h"
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

}  // namespace plimsoll::kernels
