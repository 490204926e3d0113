// AVX-512 (F/BW/VL/VNNI) row kernels: 512-bit bodies for the quantized weights
// (vpdpbusd / vpdpwssd for the integer dots); the float weights, Q8_K weights and
// odd-block tails use the 256-bit bodies (ymm_kernels.inc, with the VNNI dots).
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

inline __m256i dot_u8s8_acc(__m256i acc, __m256i u8, __m256i s8) {
  return _mm256_dpbusd_epi32(acc, u8, s8);
}
inline __m256i madd_scaled_acc(__m256i acc, __m256i p16, __m256i s16) {
  return _mm256_dpwssd_epi32(acc, p16, s16);
}

#include "kernels/x86/ymm_kernels.inc"

// Horizontal sum via memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
inline float hsum512(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return hsum(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
}

// ---- Q8_0 / Q4_0 x Q8_0: two 32-element blocks per zmm, vpdpbusd ---------------
inline __m512i concat(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
// 16 f32 lanes: the low 8 get lo, the high 8 get hi.
inline __m512 halves(float lo, float hi) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(lo), _mm512_set1_ps(hi));
}

template <int NT, typename Block>
void zmm_dot_q_x_q8_0(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int64_t cols,
                      float* out) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const BlockQ8_0* x[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    x[t] = act_row<BlockQ8_0>(acts, stride_bytes, t);
    acc[t] = _mm512_setzero_ps();
  }
  const int64_t nb = cols / kQK;
  int64_t b = 0;
  for (; b + 2 <= nb; b += 2) {
    const __m512i wq = concat(load_block(w[b]), load_block(w[b + 1]));
    const __m512i aw = _mm512_abs_epi8(wq);        // |w| as u8 (-128 -> 128)
    const __mmask64 neg = _mm512_movepi8_mask(wq);  // the sign of w moves onto x
    const float dw0 = half_to_f32(w[b].d), dw1 = half_to_f32(w[b + 1].d);
    for (int t = 0; t < NT; ++t) {
      // two 32-byte loads: blocks are 34 bytes apart
      const __m512i xq = concat(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t][b].qs)),
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t][b + 1].qs)));
      const __m512i sx = _mm512_mask_sub_epi8(xq, neg, _mm512_setzero_si512(), xq);
      const __m512i isum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), aw, sx);
      const __m512 d = halves(dw0 * half_to_f32(x[t][b].d), dw1 * half_to_f32(x[t][b + 1].d));
      acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[t]);
    }
  }
  float tail[NT] = {};
  if (b < nb) {  // odd block count: the last block through the 256-bit body
    const std::byte* w_last = w_row + b * static_cast<int64_t>(sizeof(Block));
    ymm_dot_q_x_q8_0<NT, Block>(w_last, acts + b * static_cast<int64_t>(sizeof(BlockQ8_0)), stride_bytes, kQK, tail);
  }
  for (int t = 0; t < NT; ++t) out[t] = hsum512(acc[t]) + tail[t];
}

// ---- K-quants x Q8_K: 64 elements per zmm, maddubs + vpdpwssd ------------------
// The 64 activations of a Q4_K/Q5_K group (or a Q6_K quarter pair) are
// contiguous in Q8_K, so one 64-byte load meets a weight zmm built from halves.
inline __m512i i16_halves(__m256i lo, __m256i hi) { return concat(lo, hi); }

template <int NT, bool kFive>
void zmm_dot_q45k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int64_t cols,
                  float* out) {
  const int64_t block_bytes = kFive ? sizeof(BlockQ5K) : sizeof(BlockQ4K);
  const BlockQ8K* x[NT];
  __m512 acc[NT];
  float acc_min[NT];
  for (int t = 0; t < NT; ++t) {
    x[t] = act_row<BlockQ8K>(acts, stride_bytes, t);
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = 0.f;
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const std::byte* blk = w_row + b * block_bytes;
    const auto* q4 = reinterpret_cast<const BlockQ4K*>(blk);
    const uint8_t* qs = kFive ? reinterpret_cast<const BlockQ5K*>(blk)->qs : q4->qs;
    const __m256i qh = kFive ? load32(reinterpret_cast<const BlockQ5K*>(blk)->qh) : _mm256_setzero_si256();
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) scale_min_k4(j, q4->scales, &sc[j], &mn[j]);
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm512_setzero_si512();
    for (int k = 0; k < 4; ++k) {
      const __m256i q = load32(qs + 32 * k);
      __m256i lo = _mm256_and_si256(q, m4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
      if (kFive) {
        lo = _mm256_or_si256(lo, q5_high(qh, 2 * k));
        hi = _mm256_or_si256(hi, q5_high(qh, 2 * k + 1));
      }
      const __m512i wz = concat(lo, hi);
      const __m512i s = i16_halves(_mm256_set1_epi16(sc[2 * k]), _mm256_set1_epi16(sc[2 * k + 1]));
      for (int t = 0; t < NT; ++t) {
        const __m512i xz = _mm512_loadu_si512(x[t][b].qs + 64 * k);
        isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(wz, xz), s);
      }
    }
    const float d = half_to_f32(q4->d), dmin = half_to_f32(q4->dmin);
    for (int t = 0; t < NT; ++t) {
      const int16_t* bs = x[t][b].bsums;
      int32_t msum = 0;
      for (int j = 0; j < 8; ++j) msum += mn[j] * (bs[2 * j] + bs[2 * j + 1]);
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(d * x[t][b].d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
      acc_min[t] += (dmin * x[t][b].d) * static_cast<float>(msum);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = hsum512(acc[t]) - acc_min[t];
}

template <int NT>
void zmm_dot_q6k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int64_t cols,
                 float* out) {
  const auto* w = reinterpret_cast<const BlockQ6K*>(w_row);
  const BlockQ8K* x[NT];
  __m512 acc[NT];
  for (int t = 0; t < NT; ++t) {
    x[t] = act_row<BlockQ8K>(acts, stride_bytes, t);
    acc[t] = _mm512_setzero_ps();
  }
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < cols / kQKK; ++b) {
    const int8_t* sc = w[b].scales;
    __m512i isum[NT];
    for (int t = 0; t < NT; ++t) {
      int32_t corr = 0;  // the -32 offset: 32 * sum_g scale[g] * bsum[g]
      for (int g = 0; g < 16; ++g) corr += sc[g] * x[t][b].bsums[g];
      isum[t] = _mm512_zextsi128_si512(_mm_cvtsi32_si128(-32 * corr));
    }
    for (int half = 0; half < 2; ++half) {
      const __m256i ql0 = load32(w[b].ql + 64 * half), ql1 = load32(w[b].ql + 64 * half + 32);
      const __m256i qh = load32(w[b].qh + 32 * half);
      const __m256i q0 = _mm256_or_si256(_mm256_and_si256(ql0, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x03)), 4));
      const __m256i q1 = _mm256_or_si256(_mm256_and_si256(ql1, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(0x0C)), 2));
      const __m256i q2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4),
                                         _mm256_and_si256(qh, _mm256_set1_epi8(0x30)));
      const __m256i q3 = _mm256_or_si256(
          _mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4),
          _mm256_srli_epi16(_mm256_and_si256(qh, _mm256_set1_epi8(static_cast<char>(0xC0))), 2));
      const __m512i wz[2] = {concat(q0, q1), concat(q2, q3)};
      for (int p = 0; p < 2; ++p) {
        const int g = 8 * half + 4 * p;  // four 16-element scale groups per 64 elements
        const __m512i s = i16_halves(scales_16_16(sc[g], sc[g + 1]), scales_16_16(sc[g + 2], sc[g + 3]));
        for (int t = 0; t < NT; ++t) {
          const __m512i xz = _mm512_loadu_si512(x[t][b].qs + 128 * half + 64 * p);
          isum[t] = _mm512_dpwssd_epi32(isum[t], _mm512_maddubs_epi16(wz[p], xz), s);
        }
      }
    }
    const float d = half_to_f32(w[b].d);
    for (int t = 0; t < NT; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(d * x[t][b].d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = hsum512(acc[t]);
}

template <int NT> struct ZQ8_0 { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_q_x_q8_0<NT, BlockQ8_0>(w, a, s, c, o); } };
template <int NT> struct ZQ4_0 { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_q_x_q8_0<NT, BlockQ4_0>(w, a, s, c, o); } };
template <int NT> struct ZQ4K { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_q45k<NT, false>(w, a, s, c, o); } };
template <int NT> struct ZQ5K { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_q45k<NT, true>(w, a, s, c, o); } };
template <int NT> struct ZQ6K { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_q6k<NT>(w, a, s, c, o); } };

RowKernels make_avx512_kernels() {
  // The float rows stay 256-bit (one and two tokens run them: kernel_rows.cpp): a zmm row
  // kernel (F16, two tokens a row) ran slower at batch 2, and streamed slower at one token
  // (docs/benchmarks.md).
  RowKernels k = make_ymm_kernels();
  k.fn[static_cast<int>(DType::kQ8_0)] = by_tile<ZQ8_0>;
  k.fn[static_cast<int>(DType::kQ4_0)] = by_tile<ZQ4_0>;
  k.fn[static_cast<int>(DType::kQ4_K)] = by_tile<ZQ4K>;
  k.fn[static_cast<int>(DType::kQ5_K)] = by_tile<ZQ5K>;
  k.fn[static_cast<int>(DType::kQ6_K)] = by_tile<ZQ6K>;
  // one K-quant token: the 256-bit gemv of ymm_kernels.inc (make_row_kernels) ahead of the zmm
  // tiles. On matrices that stay in cache the tiles are faster, but a decode step streams its
  // weights, and there the tiles fall behind (docs/benchmarks.md).
  return k;
}

}  // namespace

const RowKernels& avx512_row_kernels() {
  static const RowKernels kernels = make_avx512_kernels();
  return kernels;
}

const RowKernels& amx_row_kernels() {
  static const RowKernels kernels = [] {
    RowKernels k = make_avx512_kernels();
    for (DType d : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) k.gemv[static_cast<int>(d)] = nullptr;
    return k;
  }();
  return kernels;
}

}  // namespace plimsoll::kernels
