// Shared by the AVX-512 tile kernel files (tiles_avx512.cpp,
// tiles_kquants_avx512.cpp): the horizontal sum, the weight prefetch, and the
// (n_rows, n_tok) -> template instance dispatch of a TileKernel's tile.
// Include only from files compiled with the AVX-512 flags (everything here has
// internal linkage: no shared inline copies leave an ISA-flagged file).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

inline __m256 upper8(__m512 v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }

inline float hsum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), upper8(v));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Weight rows are read once per token panel, front to back; the hardware
// prefetcher sees R interleaved streams that restart every tile, so each step
// (pair of blocks, or 16 columns) also asks for the same pair kPrefetchTiles tiles (R rows each) ahead.
inline constexpr int kPrefetchTiles = 2;

inline void prefetch_ahead(const void* p, int64_t tile_bytes) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchTiles * tile_bytes, _MM_HINT_T0);
}

// ---- (n_rows, n_tok) -> template instance --------------------------------------
using TileBody = void (*)(const std::byte*, int64_t, const std::byte*, int64_t, int64_t, float*, int64_t);

template <template <int, int> class K>
void by_shape(const std::byte* w, int64_t w_row_bytes, int n_rows, const std::byte* acts, int64_t act_stride_bytes,
              int n_tok, int64_t cols, float* y, int64_t y_stride) {
  static constexpr TileBody kBodies[kRowTile][kTokenTile] = {
      {K<1, 1>::run, K<1, 2>::run, K<1, 3>::run, K<1, 4>::run},
      {K<2, 1>::run, K<2, 2>::run, K<2, 3>::run, K<2, 4>::run},
      {K<3, 1>::run, K<3, 2>::run, K<3, 3>::run, K<3, 4>::run},
      {K<4, 1>::run, K<4, 2>::run, K<4, 3>::run, K<4, 4>::run},
  };
  static_assert(kRowTile == 4 && kTokenTile == 4);
  kBodies[n_rows - 1][n_tok - 1](w, w_row_bytes, acts, act_stride_bytes, cols, y, y_stride);
}

}  // namespace
}  // namespace plimsoll::kernels
