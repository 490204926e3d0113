// AVX-512 (F/BW/VL/VNNI) row kernels: the 256-bit integer bodies with VNNI
// vpdpbusd / vpdpwssd accumulation, and 512-bit bodies for float weights.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline __m256i dot_u8s8_acc(__m256i acc, __m256i u8, __m256i s8) {
  return _mm256_dpbusd_epi32(acc, u8, s8);
}
inline __m256i madd_scaled_acc(__m256i acc, __m256i p16, __m256i s16) {
  return _mm256_dpwssd_epi32(acc, p16, s16);
}

#include "kernels/x86/ymm_kernels.inc"

// ---- float weights, 16 columns per zmm, two accumulators per token ----------
struct ZLoadF32 {
  using W = float;
  static __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
};
struct ZLoadF16 {
  using W = uint16_t;
  static __m512 load16(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct ZLoadBF16 {  // exact widening (<< 16), then f32 FMA: same products as the scalar twin
  using W = uint16_t;
  static __m512 load16(const uint16_t* p) {
    const __m512i u32 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(u32, 16));
  }
};

// Horizontal sum via memory: GCC 12's _mm512_reduce_add_ps trips -Wmaybe-uninitialized.
inline float hsum512(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  return hsum(_mm256_add_ps(_mm256_load_ps(lanes), _mm256_load_ps(lanes + 8)));
}

template <int NT, typename Z, typename Y>
void zmm_dot_float(const std::byte* w_row, const std::byte* acts, int64_t stride, int64_t cols,
                   float* out) {
  const auto* w = reinterpret_cast<const typename Z::W*>(w_row);  // [cols]
  const float* x[NT];                                                // NT x [cols]
  __m512 acc0[NT], acc1[NT];
  for (int t = 0; t < NT; ++t) {
    x[t] = act_row<float>(acts, stride, t);
    acc0[t] = acc1[t] = _mm512_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 32 <= cols; c += 32) {
    const __m512 w0 = Z::load16(w + c), w1 = Z::load16(w + c + 16);
    for (int t = 0; t < NT; ++t) {
      acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[t] + c), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x[t] + c + 16), acc1[t]);
    }
  }
  for (; c + 16 <= cols; c += 16) {
    const __m512 w0 = Z::load16(w + c);
    for (int t = 0; t < NT; ++t) acc0[t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x[t] + c), acc0[t]);
  }
  for (int t = 0; t < NT; ++t) {
    float s = hsum512(_mm512_add_ps(acc0[t], acc1[t]));
    for (int64_t cc = c; cc < cols; ++cc) s += Y::one(w[cc]) * x[t][cc];
    out[t] = s;
  }
}

template <int NT> struct ZF32 { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_float<NT, ZLoadF32, LoadF32>(w, a, s, c, o); } };
template <int NT> struct ZF16 { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_float<NT, ZLoadF16, LoadF16>(w, a, s, c, o); } };
template <int NT> struct ZBF16 { static void run(const std::byte* w, const std::byte* a, int64_t s, int64_t c, float* o) { zmm_dot_float<NT, ZLoadBF16, LoadBF16>(w, a, s, c, o); } };

RowKernels make_avx512_kernels() {
  RowKernels k = make_ymm_kernels();
  k.fn[static_cast<int>(DType::kF32)] = by_tile<ZF32>;
  k.fn[static_cast<int>(DType::kF16)] = by_tile<ZF16>;
  k.fn[static_cast<int>(DType::kBF16)] = by_tile<ZBF16>;
  return k;
}

}  // namespace

const RowKernels& avx512_row_kernels() {
  static const RowKernels kernels = make_avx512_kernels();
  return kernels;
}

}  // namespace plimsoll::kernels
