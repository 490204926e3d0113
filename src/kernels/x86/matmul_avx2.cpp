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

// ---- one token over many rows (decode at batch 1): Q8_0 / Q4_0 -----------------
// The activation's block scales (as f32) and, for Q4_0, its -8 * block sums (the
// nibbles' offset, so each block's dot is one maddubs of the unsigned nibbles)
// are computed once per call instead of once per row; then each row runs 8
// blocks per step as ymm_dot1_q_x_q8_0 does.
constexpr int64_t kGemvMaxBlocks = 1024;  // rows of up to 32768 columns (else row by row)

inline __m256i block_dot_unsigned(const BlockQ4_0& w, __m256i xq) {  // sum nib * x per int32 lane
  return dot_u8s8_acc(_mm256_setzero_si256(), q4_0_nibbles(w.qs), xq);
}
inline __m256i block_dot_unsigned(const BlockQ8_0& w, __m256i xq) {  // sign trick: no offset
  const __m256i wq = load_q8_0(w);
  return dot_u8s8_acc(_mm256_setzero_si256(), _mm256_sign_epi8(wq, wq), _mm256_sign_epi8(xq, wq));
}

template <typename Block>
void gemv_q_x_q8_0(const std::byte* w, int64_t w_row_bytes, int64_t n_rows, const std::byte* act, int64_t cols,
                   float* y) {
  constexpr bool kQ4 = std::is_same_v<Block, BlockQ4_0>;
  const auto* x = reinterpret_cast<const BlockQ8_0*>(act);
  const int64_t nb = cols / kQK, nb8 = nb / 8 * 8;
  if (nb > kGemvMaxBlocks) {
    for (int64_t r = 0; r < n_rows; ++r) {
      y[r] = ymm_dot1_q_x_q8_0(reinterpret_cast<const Block*>(w + r * w_row_bytes), x, nb);
    }
    return;
  }
  alignas(32) float xd[kGemvMaxBlocks];
  alignas(32) int32_t xcorr[kGemvMaxBlocks];
  for (int64_t b = 0; b < nb; ++b) {
    xd[b] = half_to_f32(x[b].d);
    if (kQ4) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
      const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xq), _mm256_set1_epi16(1));
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
      xcorr[b] = -8 * _mm_cvtsi128_si32(s);
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto* wr = reinterpret_cast<const Block*>(w + r * w_row_bytes);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb8; b += 8) {
      __m256i s[8];
      for (int i = 0; i < 8; ++i) {
        s[i] = block_dot_unsigned(wr[b + i], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + i].qs)));
      }
      __m256i isum = reduce8(s);
      if (kQ4) isum = _mm256_add_epi32(isum, _mm256_load_si256(reinterpret_cast<const __m256i*>(xcorr + b)));
      const __m256 d = _mm256_mul_ps(scales8(wr + b), _mm256_load_ps(xd + b));
      acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(isum), acc);
    }
    float tail = 0.f;
    for (int64_t b = nb8; b < nb; ++b) {
      const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(block_dot_unsigned(wr[b], xq)),
                                 _mm256_extracti128_si256(block_dot_unsigned(wr[b], xq), 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(1, 0, 3, 2)));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, _MM_SHUFFLE(2, 3, 0, 1)));
      const int32_t isum = _mm_cvtsi128_si32(s4) + (kQ4 ? xcorr[b] : 0);
      tail += half_to_f32(wr[b].d) * xd[b] * static_cast<float>(isum);
    }
    y[r] = hsum(acc) + tail;
  }
}

}  // namespace

#if defined(__AVXVNNI__)
const RowKernels& avx2_vnni_row_kernels() {
#else
const RowKernels& avx2_row_kernels() {
#endif
  static const RowKernels kernels = [] {
    RowKernels k = make_ymm_kernels();
    k.gemv[static_cast<int>(DType::kQ8_0)] = gemv_q_x_q8_0<BlockQ8_0>;
    k.gemv[static_cast<int>(DType::kQ4_0)] = gemv_q_x_q8_0<BlockQ4_0>;
    return k;
  }();
  return kernels;
}

}  // namespace plimsoll::kernels
