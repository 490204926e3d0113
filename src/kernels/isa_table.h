// One table of kernels per ISA level (scalar, AVX2, AVX-512, AMX): matmul's row,
// tile and panel kernels, the element-wise ops with ISA paths and attention.
// dispatch.cpp checks the CPU's features once (cpu_has), picks the level
// (kernels.h: active_isa / set_isa) and builds each level's table on first use;
// matmul.cpp, ops.cpp and attention.cpp call through active_table(). Adding an
// ISA is adding a table.
#pragma once

#include <cstdint>

#include "kernels/attention.h"
#include "kernels/codecs.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

struct IsaTable {
  // ---- matmul (matmul.cpp): panels first (the first that takes the batch), then
  // tiles, then the row kernels, which cover every dtype
  const RowKernels* rows = nullptr;
  const TileKernels* tiles = nullptr;       // null: none
  const PanelKernels* panels[3] = {};       // tried in order; null: none
  // the row kernels' activations (Q8_0 for Q8_0/Q4_0 weights, Q8_K for K-quants), byte
  // for byte as the scalar codecs (the default)
  void (*quantize_q8_0)(const float* x, BlockQ8_0* y, int64_t n) = kernels::quantize_q8_0;
  void (*quantize_q8_k)(const float* x, BlockQ8K* y, int64_t n) = kernels::quantize_q8_k;
  // ---- element-wise ops (ops.cpp)
  float (*dot_f32)(const float* a, const float* b, int64_t n) = nullptr;
  void (*axpy_f32)(float* y, float a, const float* x, int64_t n) = nullptr;
  void (*swiglu)(float* out, const float* gate, const float* up, int64_t n) = nullptr;
  double (*sum_exp)(const float* x, int64_t n, float shift) = nullptr;
  void (*f32_to_f16_row)(const float* src, uint16_t* dst, int64_t n) = nullptr;
  // ---- attention (attention.cpp); head sizes a path does not take run the scalar twin
  void (*attend)(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) = nullptr;
  void (*attend_causal)(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out,
                        int64_t out_stride) = nullptr;
};

// The table of an ISA level the CPU has (built on first use).
const IsaTable& isa_table(Isa isa);
// isa_table(active_isa())
const IsaTable& active_table();

}  // namespace plimsoll::kernels
