// AVX2 + FMA + F16C row kernels (built with those flags only; chosen at run
// time). Integer dots use maddubs/madd; the shared bodies are ymm_kernels.inc.
// The same source is built a second time with AVX-VNNI (matmul_avxvnni.cpp,
// __AVXVNNI__ defined): the dots are then vpdpbusd / vpdpwssd (VEX), the table
// avx2_vnni_row_kernels().
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/ymm_common.h"
#include "kernels/x86/ymm_unpack.h"

namespace plimsoll::kernels {
namespace {

#if defined(__AVXVNNI__)
inline __m256i dot_u8s8_acc(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
inline __m256i madd_scaled_acc(__m256i acc, __m256i p16, __m256i s16) {
  return _mm256_dpwssd_avx_epi32(acc, p16, s16);
}
#else
inline __m256i dot_u8s8_acc(__m256i acc, __m256i u8, __m256i s8) {
  // maddubs cannot saturate here: |u8| <= 128 and |s8| <= 127 give pairs <= 32512.
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
}
inline __m256i madd_scaled_acc(__m256i acc, __m256i p16, __m256i s16) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, s16));
}
#endif

#include "kernels/x86/ymm_kernels.inc"

}  // namespace

#if defined(__AVXVNNI__)
const RowKernels& avx2_vnni_row_kernels() {
#else
const RowKernels& avx2_row_kernels() {
#endif
  static const RowKernels kernels = make_ymm_kernels();
  return kernels;
}

}  // namespace plimsoll::kernels
