// The attention entries every SIMD level shares (attend, attend_causal of attention.h):
// the head sizes a level takes (others run the scalar twin), query rows in blocks over
// one KV head, and the choice of kernel by KV dtype and block rows. Included by each
// ISA's attention file, compiled with its flags; internal linkage, so nothing built with
// one ISA's flags is shared with another's.
//
// K, one level's attention kernels (static members):
//   kLanes          head_dim must be a multiple of it, and at most kAttendMaxHeadDim
//   kDecodeRows     query heads of one KV head per block at a decode position
//   kCausalRows     consecutive query rows per block in a prefill run
//   kMinSharedRows  fewer heads per KV head than this run one at a time (K::row)
//   rows<T, nr>(q, q_stride, head_dim, kv, n_vis, scale, slopes, out, out_stride): nr
//     rows (1..max of the two blocks) q + r * q_stride over one KV head of element type
//     T (float, or uint16_t for f16), row r seeing positions [0, n_vis[r]) with ALiBi
//     slope slopes[r]
//   row<T>(q, head_dim, kv, n_pos, scale, slope, out): one row (if kMinSharedRows > 1)
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>

#include "kernels/attention.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {

inline constexpr int64_t kAttendMaxHeadDim = 512;  // the SIMD kernels' row buffers

namespace {

using AttendRowsFn = void (*)(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                              float scale, const float* slopes, float* out, int64_t out_stride);

// K::rows<T, nr> for nr = 1, 2, ...: each with its row count a constant (its
// accumulators stay in registers).
template <class K, class T, size_t... I>
constexpr std::array<AttendRowsFn, sizeof...(I)> rows_by_count(std::index_sequence<I...>) {
  return {&K::template rows<T, static_cast<int>(I) + 1>...};
}

template <class K>
void attend_rows_of(const float* q, int64_t q_stride, int nr, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                    float scale, const float* slopes, float* out, int64_t out_stride) {
  constexpr size_t kMaxRows = std::max(K::kDecodeRows, K::kCausalRows);
  static constexpr auto kF32 = rows_by_count<K, float>(std::make_index_sequence<kMaxRows>());
  static constexpr auto kF16 = rows_by_count<K, uint16_t>(std::make_index_sequence<kMaxRows>());
  const auto& by_rows = kv.dtype == DType::kF16 ? kF16 : kF32;
  by_rows[nr - 1](q, q_stride, hd, kv, n_vis, scale, slopes, out, out_stride);
}

template <class K>
bool attend_fits(int64_t head_dim) {
  return head_dim % K::kLanes == 0 && head_dim <= kAttendMaxHeadDim;
}

// attend (attention.h) with K's kernels.
template <class K>
void attend_with(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) {
  if (!attend_fits<K>(head_dim)) return attend_scalar(q, group, head_dim, kv, n_pos, scale, slopes, out);
  if constexpr (K::kMinSharedRows > 1) {
    if (group < K::kMinSharedRows) {  // one row at a time reads the KV head again, still cheaper
      auto* row = kv.dtype == DType::kF16 ? &K::template row<uint16_t> : &K::template row<float>;
      for (int64_t g = 0; g < group; ++g) {
        row(q + g * head_dim, head_dim, kv, n_pos, scale, slopes != nullptr ? slopes[g] : 0.0f, out + g * head_dim);
      }
      return;
    }
  }
  int64_t n_vis[K::kDecodeRows];
  float sl[K::kDecodeRows];
  for (int64_t g0 = 0; g0 < group; g0 += K::kDecodeRows) {
    const int nr = static_cast<int>(std::min<int64_t>(K::kDecodeRows, group - g0));
    for (int r = 0; r < nr; ++r) {
      n_vis[r] = n_pos;
      sl[r] = slopes != nullptr ? slopes[g0 + r] : 0.0f;
    }
    attend_rows_of<K>(q + g0 * head_dim, head_dim, nr, head_dim, kv, n_vis, scale, sl, out + g0 * head_dim, head_dim);
  }
}

// attend_causal (attention.h) with K's kernels: row i0 + r is position first_pos + i0 + r.
template <class K>
void attend_causal_with(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  if (!attend_fits<K>(head_dim)) {
    return attend_causal_scalar(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
  }
  int64_t n_vis[K::kCausalRows];
  float sl[K::kCausalRows];
  std::fill(sl, sl + K::kCausalRows, slope != nullptr ? *slope : 0.0f);
  for (int64_t i0 = 0; i0 < n_q; i0 += K::kCausalRows) {
    const int nr = static_cast<int>(std::min<int64_t>(K::kCausalRows, n_q - i0));
    for (int r = 0; r < nr; ++r) n_vis[r] = first_pos + i0 + r + 1;
    attend_rows_of<K>(q + i0 * q_stride, q_stride, nr, head_dim, kv, n_vis, scale, sl, out + i0 * out_stride,
                      out_stride);
  }
}

}  // namespace
}  // namespace plimsoll::kernels
