// Each ISA level's matmul kernel rows (kernel_rows.h): the builders dispatch.cpp's tables
// call, the batch sizes from which each kernel runs, and the look-up matmul does.
#include "kernels/kernel_rows.h"

#include <cstdint>

namespace plimsoll::kernels {

// A row for each dtype k has a panel kernel for.
void add_panels(IsaTable* t, Isa isa, const PanelKernels& k, RangeOf range) {
  for (int d = 0; d < kNumDTypes; ++d) {
    if (k.k[d].rows == nullptr) continue;
    t->kernel_rows.push_back({isa, static_cast<DType>(d), range(static_cast<DType>(d)), &k.k[d], nullptr, nullptr});
  }
}

// One token: the gemv for each dtype the table's row kernels have one for.
void add_gemvs(IsaTable* t, Isa isa) {
  for (int d = 0; d < kNumDTypes; ++d) {
    if (t->rows->gemv[d] == nullptr) continue;
    t->kernel_rows.push_back({isa, static_cast<DType>(d), BatchRange{1, 1}, nullptr, nullptr, t->rows->gemv[d]});
  }
}

// A row for each dtype k has a tile kernel for.
void add_tiles(IsaTable* t, Isa isa, const TileKernels& k, RangeOf range) {
  for (int d = 0; d < kNumDTypes; ++d) {
    if (k.k[d].tile == nullptr) continue;
    t->kernel_rows.push_back({isa, static_cast<DType>(d), range(static_cast<DType>(d)), nullptr, &k.k[d], nullptr});
  }
}

namespace {

bool is_float(DType d) { return d == DType::kF32 || d == DType::kF16 || d == DType::kBF16; }
bool is_superblock(DType d) { return act_dtype(d) == DType::kQ8_K; }  // 256-element blocks

}  // namespace

// The batch sizes (docs/benchmarks.md has the measurements behind them):
// AVX2 panels (below: the AVX2 row kernels). A panel packs every weight row it meets once per
// call, so a small batch pays the packing for few tokens: the plain AVX2 build's Q8_0 (rows
// widened to int16, from 8; IQ4_NL the same) and super-block types (K-quants, IQ4_XS, the
// grids: from 4) start later than Q4_0 / Q4_1 / Q5_0 / Q5_1 (nibbles unpacked, from 2) and
// the VNNI builds (bytes as they are, every
// quantized dtype from 2).
BatchRange avx2_panel_range(DType d) {
  if (is_float(d) || is_superblock(d)) return {4};
  return {d == DType::kQ8_0 || d == DType::kIQ4_NL ? 8 : 2};  // IQ4_NL: Q8_0's int16 panel
}
// AVX2-VNNI: its own Q8_0 / Q4_0 / K-quant panels from 2 tokens (bytes as they are); the AVX2
// panels it keeps (the floats, the other quantized types) from AVX2's sizes.
BatchRange avx2_vnni_panel_range(DType d) {
  const bool own = d == DType::kQ8_0 || d == DType::kQ4_0 || d == DType::kQ4_K || d == DType::kQ5_K ||
                   d == DType::kQ6_K;
  return own ? BatchRange{2} : avx2_panel_range(d);
}
// AVX-512 broadcast kernels for float weights, from where they overtake the dot-product
// tiles (F16 / BF16 later: half the bytes to stream) up to AMX-BF16's sizes.
BatchRange avx512_float_panel_range(DType d) { return {d == DType::kF32 ? 10 : 16}; }
// AVX-512 VNNI ymm panels, ahead of the zmm tiles (Q8_0, Q4_0, Q4_K, Q6_K) and the row
// kernels (Q5_K) from where they overtake them.
BatchRange avx512_ymm_panel_range(DType d) {
  switch (d) {
    case DType::kQ8_0: return {12};
    case DType::kQ4_0: return {8};
    case DType::kQ4_K: return {8};
    case DType::kQ5_K: return {2};
    default: return {16};  // Q6_K
  }
}
// AVX-512 tiles: Q8_0 and the floats from 3 tokens (one Q8_0 token takes its gemv). One float
// token: the tiles' four interleaved row streams read a decode step's weights at about half
// the speed of the 256-bit row kernel row after row (BM_DecodeStream F16). Two tokens: the
// tiles' zmm steps, not the memory stream, bound them. The rest from one token.
BatchRange avx512_tile_range(DType d) { return {d == DType::kQ8_0 || is_float(d) ? 3 : 1}; }
// The AMX table's tiles from one token (below its AMX batch sizes: no AMX CPU has been
// measured with the row kernels there).
BatchRange any_batch(DType) { return {}; }
// AMX-INT8 from 8 tokens; below: the AVX-512 VNNI tiles.
BatchRange amx_int8_range(DType) { return {8}; }
// AMX-BF16: F16 / BF16 from 32 tokens (below, converting the weight panels, which stream from
// memory in a decode step, costs more than the AVX-512 FMA kernels take); F32 from one token
// past a panel tile, which the broadcast panels would run as two full tiles; every float dtype
// from a panel tile (kPanelTokens) on rows of 2048+ columns, where a token tile's f32
// activations (128+ KiB) no longer fit L1 for the broadcast panels.
BatchRange amx_bf16_range(DType d) {
  return {d == DType::kF32 ? kPanelTokens + 1 : 32, INT64_MAX, 2048, kPanelTokens};
}
// NEON panels: Q8_0 / Q4_0 from 2 tokens, the floats from 4 (below: the row kernels).
BatchRange neon_panel_range(DType d) { return {is_float(d) ? 4 : 2}; }

const KernelRow* kernel_row_for(const IsaTable& table, DType dtype, int64_t n_tokens, int64_t cols) {
  for (const KernelRow& r : table.kernel_rows) {
    if (r.dtype == dtype && r.tokens.contains(n_tokens, cols)) return &r;
  }
  return nullptr;
}

const KernelRow* panel_row(const IsaTable& table, const PanelKernel& k) {
  for (const KernelRow& r : table.kernel_rows) {
    if (r.panel == &k) return &r;
  }
  return nullptr;
}

}  // namespace plimsoll::kernels
