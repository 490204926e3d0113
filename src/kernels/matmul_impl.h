// The internal contract between the matmul driver (matmul.cpp) and the
// per-ISA row kernels (scalar/, x86/): one weight row against a tile of tokens.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace plimsoll::kernels {

inline constexpr int kTokenTile = 4;  // tokens per weight-row pass
inline constexpr int kNumDTypes = 9;

// out[t] = dot(w_row, act_t) for t < n_tok (1..kTokenTile), where act_t starts at
// acts + t * act_stride_bytes and holds cols elements in the activation format
// of w's dtype (act_dtype below): f32 for float weights, Q8_0 blocks for
// Q8_0/Q4_0, Q8_K blocks for K-quants.
using RowTileFn = void (*)(const std::byte* w_row, const std::byte* acts, int64_t act_stride_bytes,
                           int n_tok, int64_t cols, float* out);

struct RowKernels {
  RowTileFn fn[kNumDTypes] = {};  // indexed by DType
};

// What the activation rows are converted to before the dot products.
inline DType act_dtype(DType w) {
  switch (w) {
    case DType::kQ8_0:
    case DType::kQ4_0: return DType::kQ8_0;
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ8_K: return DType::kQ8_K;
    default: return DType::kF32;
  }
}

const RowKernels& scalar_row_kernels();
const RowKernels& avx2_row_kernels();    // needs AVX2 + FMA + F16C
const RowKernels& avx512_row_kernels();  // needs AVX-512 F/BW/VL/VNNI + F16C + FMA

}  // namespace plimsoll::kernels
