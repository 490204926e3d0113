// AVX2 + FMA + F16C row kernels (built with those flags only; chosen at run
// time). Integer dots use maddubs/madd; the shared bodies are ymm_kernels.inc.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline __m256i dot_u8s8_acc(__m256i acc, __m256i u8, __m256i s8) {
  // maddubs cannot saturate here: |u8| <= 128 and |s8| <= 127 give pairs <= 32512.
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
}
inline __m256i madd_scaled_acc(__m256i acc, __m256i p16, __m256i s16) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s16));
}

#include "kernels/x86/ymm_kernels.inc"

}  // namespace

const RowKernels& avx2_row_kernels() {
  static const RowKernels kernels = make_ymm_kernels();
  return kernels;
}

}  // namespace plimsoll::kernels
