// The internal contract between the matmul driver (matmul.cpp) and the
// per-ISA kernels (scalar/, x86/, arm/): row kernels (one weight row x a few tokens)
// and tile kernels (kRowTile rows x kTokenTile tokens over prepared activations).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/blocks.h"

namespace plimsoll::kernels {

inline constexpr int kTokenTile = 4;  // tokens per weight-row pass
inline constexpr int kNumDTypes = 23;

// The batches a kernel row of an ISA table (isa_table.h) is chosen for: n_tokens in
// [min_tokens, max_tokens], or on rows of wide_cols+ columns from wide_min_tokens tokens
// (0: no such rule). Rows ahead of it in the table take their batches first.
struct BatchRange {
  int64_t min_tokens = 1;
  int64_t max_tokens = INT64_MAX;
  int64_t wide_cols = 0;
  int64_t wide_min_tokens = 0;
  bool contains(int64_t n_tokens, int64_t cols) const {
    if (n_tokens > max_tokens) return false;
    return n_tokens >= min_tokens || (wide_min_tokens > 0 && cols >= wide_cols && n_tokens >= wide_min_tokens);
  }
};

// out[t] = dot(w_row, act_t) for t < n_tok (1..kTokenTile), where act_t starts at
// acts + t * act_stride_bytes and holds cols elements in the activation format
// of w's dtype (act_dtype below): f32 for float weights, Q8_0 blocks for the
// 32-element block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL), Q8_K blocks for
// the 256-element super-block types (K-quants, IQ4_XS, the grid i-quants IQ2_XXS ...).
using RowTileFn = void (*)(const std::byte* w_row, const std::byte* acts, int64_t act_stride_bytes,
                           int n_tok, int64_t cols, float* out);

// y[r] = dot(w row r, act) for r < n_rows: one token over many rows (decode at
// batch 1), so a kernel can share the activation's loads and per-block sums
// across rows; act: one row of cols elements in the activation format.
using GemvFn = void (*)(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* act,
                        int64_t cols, float* y);

struct RowKernels {
  RowTileFn fn[kNumDTypes] = {};  // indexed by DType
  GemvFn gemv[kNumDTypes] = {};   // null: fn with one token, row by row
};

// What the activation rows are converted to before the dot products.
inline DType act_dtype(DType w) {
  switch (w) {
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kIQ4_NL: return DType::kQ8_0;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_XS:
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ3_XXS:
    case DType::kIQ1_S:
    case DType::kIQ3_S:
    case DType::kIQ2_S:
    case DType::kIQ1_M:
    case DType::kQ8_K: return DType::kQ8_K;
    default: return DType::kF32;
  }
}

// ---- tile kernels (ISA fast paths; null entries fall back to the row kernels)
inline constexpr int kRowTile = 4;        // weight rows per tile
inline constexpr int kTokenPanel = 64;    // tokens whose prepared rows stay in L2 while
                                          // a thread's weight rows stream past them

// Activations the tile kernel reads: f32 x as is (prepare == nullptr), or rows
// prepared once per call in the kernel's own layout (quantized, with the
// per-lane offsets and scales its inner loop wants).
struct TileKernel {
  // bytes of one prepared activation row of cols elements (a multiple of 64)
  int64_t (*act_row_bytes)(int64_t cols) = nullptr;
  // prepares x rows [t0, t1) (x: [n, cols] f32) into dst + t * act_row_bytes(cols);
  // dst is 64-byte aligned
  void (*prepare)(const float* x, int64_t cols, int64_t t0, int64_t t1, std::byte* dst) = nullptr;
  // y[t * y_stride + r] = dot(w row r, act t) for r < n_rows (1..kRowTile) and
  // t < n_tok (1..kTokenTile); w rows are w_row_bytes apart, acts act_stride_bytes.
  void (*tile)(const std::byte* w, int64_t w_row_bytes, int n_rows, const std::byte* acts,
               int64_t act_stride_bytes, int n_tok, int64_t cols, float* y, int64_t y_stride) = nullptr;
};

struct TileKernels {
  TileKernel k[kNumDTypes];  // indexed by DType; tile == nullptr: none
};

// ---- panel kernels: token tiles of kPanelTokens prepared once per call, weights
// in panels of kPanelRows rows (AMX-INT8, AMX-BF16, and the AVX-512 broadcast
// kernels for float weights) ----
inline constexpr int kPanelRows = 16;
inline constexpr int kPanelTokens = 16;
// The batch sizes each kernel below is chosen for: its rows (kernel_rows.cpp).
// AMX-INT8 (Q8_0 / Q4_0 / Q4_K / Q6_K weights): the activations are prepared once per call in the kernel's layout (Q8_0 values
// and scales, token tiles padded with zeros).
inline constexpr int kAmxRows = kPanelRows;
inline constexpr int kAmxTokens = kPanelTokens;

struct PanelKernel {
  // bytes of the prepared activations of n_tokens rows of cols elements
  int64_t (*act_bytes)(int64_t n_tokens, int64_t cols) = nullptr;
  // prepares token tiles [tt0, tt1) of x ([n_tokens, cols] f32) into dst (64-byte aligned)
  void (*prepare)(const float* x, int64_t n_tokens, int64_t cols, int64_t tt0, int64_t tt1, std::byte* dst) = nullptr;
  // y[t * y_stride + r] = dot(w row r, act t) for r < n_rows, t < n_tokens (AMX: loads
  // the tile configuration on the calling thread and releases it before returning)
  void (*rows)(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* acts, int64_t n_tokens,
               int64_t cols, float* y, int64_t y_stride) = nullptr;
  // bytes of the weight panel rows asks of panel_scratch (scratch.h) per thread for rows of
  // cols columns, any batch (what it allocates)
  int64_t (*panel_bytes)(int64_t cols) = nullptr;
};

struct PanelKernels {
  PanelKernel k[kNumDTypes];  // indexed by DType; rows == nullptr: none
};

const RowKernels& scalar_row_kernels();
const RowKernels& avx2_row_kernels();    // needs AVX2 + FMA + F16C
const RowKernels& avx2_vnni_row_kernels();  // the same + AVX-VNNI (matmul_avxvnni.cpp)
const RowKernels& avx512_row_kernels();  // needs AVX-512 F/BW/VL/VNNI + F16C + FMA
// The same with one K-quant token on the zmm tiles, not the gemv: the AMX table's (the gemv
// was chosen on a Zen 4's streamed decode; no AMX CPU has been measured with it).
const RowKernels& amx_row_kernels();
// same needs; F32/F16/BF16/Q8_0/Q4_0/Q4_K/Q6_K
const TileKernels& avx512_tile_kernels();
// The same tiles, which the AMX table's rows take from one float token and two Q8_0 tokens on
// (below its AMX batch sizes: no AMX CPU has been measured with the row kernels there).
const TileKernels& amx_tile_kernels();
// sets the Q4_K / Q6_K entries (tiles_kquants_avx512.cpp; called by avx512_tile_kernels)
void add_avx512_kquant_tiles(TileKernels* k);
// needs AVX-512 as above + AMX-TILE/INT8 and the OS's permission for tile data
// (matmul.cpp asks for it once); Q8_0/Q4_0/Q4_K/Q6_K
const PanelKernels& amx_kernels();
// sets the Q4_K / Q6_K entries (tiles_amx_kquants.cpp; called by amx_kernels)
void add_amx_kquant_kernels(PanelKernels* k);
// AMX-BF16 for F32/F16/BF16 weights (bf16 hi/lo splits, tiles_amx_bf16.cpp); also
// needs AMX-BF16 and AVX512-BF16: amx_bf16_usable() (kernels.h) says so.
const PanelKernels& amx_bf16_kernels();
// AVX-512 broadcast kernels for F32/F16/BF16 weights (panels_avx512.cpp; the
// AVX-512 tiles' needs).
const PanelKernels& avx512_panel_kernels();

// AVX2 panel kernels for Q8_0 / Q4_0, Q4_K / Q5_K / Q6_K and F32 / F16 / BF16 weights (panels_avx2.cpp;
// AVX2 + FMA + F16C)
const PanelKernels& avx2_panel_kernels();
// the same + AVX-VNNI for Q8_0 / Q4_0 (panels_avxvnni.cpp) and the K-quants
// (panels_kquants_avxvnni.cpp); the float entries are AVX2's
const PanelKernels& avx2_vnni_panel_kernels();
// The same 256-bit Q8_0 / Q4_0 panels with AVX-512 VNNI + VL's vpdpbusd (panels_avx512_ymm.cpp;
// the AVX-512 tiles' needs), and the K-quant panels the same way (panels_kquants_avx512_ymm.cpp)
const PanelKernels& avx512_ymm_panel_kernels();
// sets its Q4_K / Q5_K / Q6_K entries (panels_kquants_avx512_ymm.cpp)
void add_avx512_ymm_kquant_panels(PanelKernels* k);
// sets the Q4_K / Q5_K / Q6_K entries (panels_kquants_avx2.cpp; called by avx2_panel_kernels)
void add_avx2_kquant_panels(PanelKernels* k);
// the same with AVX-VNNI's vpdpbusd (panels_kquants_avxvnni.cpp; called by avx2_vnni_panel_kernels)
void add_avx2_vnni_kquant_panels(PanelKernels* k);
// AVX2 activation quantizers for the row kernels, byte for byte the scalar
// quantize_q8_0 / quantize_q8_k (panels_avx2.cpp, panels_kquants_avx2.cpp).
void avx2_quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void avx2_quantize_q8_k(const float* x, BlockQ8K* y, int64_t n);

// AArch64: NEON row and panel kernels (arm/matmul_neon.cpp; the baseline) and the same
// with SDOT (arm/matmul_neon_dot.cpp; needs dotprod, HWCAP_ASIMDDP). Rows: F32/F16/BF16/
// Q8_0/Q4_0/Q4_K/Q5_K/Q6_K (Q8_K: the scalar twin); panels: Q8_0/Q4_0 and F32/F16/BF16.
// aarch64 builds only.
const RowKernels& neon_row_kernels();
const PanelKernels& neon_panel_kernels();
const RowKernels& neon_dot_row_kernels();
const PanelKernels& neon_dot_panel_kernels();
// The same with SMMLA panels for Q8_0 / Q4_0 batches (arm/matmul_neon_i8mm.cpp; needs
// dotprod and i8mm, HWCAP2_I8MM); the float entries are neon_dot_panel_kernels'.
const PanelKernels& neon_i8mm_panel_kernels();

// The scalar twins of the ops with ISA paths (ops.cpp).
float dot_f32_scalar(const float* a, const float* b, int64_t n);
void axpy_f32_scalar(float* y, float a, const float* x, int64_t n);
void swiglu_scalar(float* out, const float* gate, const float* up, int64_t n);
void f32_to_f16_row_scalar(const float* src, uint16_t* dst, int64_t n);

// The element-wise ops and attention of one level (an ISA table's entries): the SIMD
// levels' are the shared drivers (simd_ops.h, attention_driver.h) over the level's
// vector trait; their attention runs the scalar twin for head sizes it does not take.
struct PagedKv;
struct VecKernels {
  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  void (*axpy_f32)(float* y, float a, const float* x, int64_t n) = nullptr;
  void (*swiglu)(float* out, const float* gate, const float* up, int64_t n) = nullptr;
  double (*sum_exp)(const float* x, int64_t n, float shift) = nullptr;
  void (*f32_to_f16_row)(const float* src, uint16_t* dst, int64_t n) = nullptr;
  void (*attend)(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) = nullptr;
  void (*attend_causal)(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out,
                        int64_t out_stride) = nullptr;
};
// x86 builds only: AVX2 + FMA + F16C (x86/ops_avx2.cpp; attention: head_dim % 8 == 0, <= 512)
// and AVX-512 (x86/ops_avx512.cpp with x86/attention_avx512.cpp's; head_dim % 16 == 0, <= 512).
const VecKernels& avx2_vec_kernels();
const VecKernels& avx512_vec_kernels();
void avx512_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                   const float* slopes, float* out);
void avx512_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                          int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride);
// aarch64 builds only (arm/ops_neon.cpp; attention: head_dim % 4 == 0, <= 512).
const VecKernels& neon_vec_kernels();

}  // namespace plimsoll::kernels
