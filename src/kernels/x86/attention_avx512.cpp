// AVX-512 attention over a paged KV cache: 16 positions at a time per query
// row (scores, one max, one vector exp), values accumulated in zmm-sized rows.
// Rows over one KV head (a decode token's grouped query heads, or a prefill run's
// consecutive positions) go in blocks that share each chunk's transposed keys and
// each value row. Keys and values are f32 or f16 (widened to f32 as they are loaded).
// GCC 12's AVX-512 headers self-initialize their "undefined" vectors (GCC PR105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention.h"
#include "kernels/attention_driver.h"
#include "kernels/paged_kv_rows.h"
#include "kernels/matmul_impl.h"
#include "kernels/x86/transpose_avx512.h"
#include "kernels/x86/avx512_vec.h"

namespace plimsoll::kernels {
namespace {

constexpr int kChunk = 16;  // positions per softmax update
constexpr int64_t kMaxHeadDim = kAttendMaxHeadDim;

// 16 keys' or values' elements as f32.
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// Lane j of the result = sum of v[j]'s 16 lanes: a transpose-and-add tree
// (45 shuffles and adds for 16 sums, where 16 separate reductions take ~150).
inline __m512 sum16x16(const __m512 (&v)[16]) {
  __m512 b[4];
  for (int g = 0; g < 4; ++g) {  // b[g], 128-bit lane k: lane k's partial sums of v[4g..4g+3]
    const __m512 *x = v + 4 * g;
    const __m512 a01 = _mm512_add_ps(_mm512_unpacklo_ps(x[0], x[1]), _mm512_unpackhi_ps(x[0], x[1]));
    const __m512 a23 = _mm512_add_ps(_mm512_unpacklo_ps(x[2], x[3]), _mm512_unpackhi_ps(x[2], x[3]));
    b[g] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(a01), _mm512_castps_pd(a23))),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(a01), _mm512_castps_pd(a23))));
  }
  const __m512 d01 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(b[0], b[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 d23 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(b[2], b[3], _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_f32x4(d01, d23, _MM_SHUFFLE(3, 1, 3, 1)));
}

// Lane j < n: dot(q, k[j]) over hd elements (a multiple of 16); lanes >= n: 0.
template <class T>
inline __m512 dots16(const float* q, const T* const* k, int n, int64_t hd) {
  __m512 part[16];
  for (int j = 0; j < 16; ++j) part[j] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; d += 16) {
    const __m512 qd = _mm512_loadu_ps(q + d);
    for (int j = 0; j < n; ++j) part[j] = _mm512_fmadd_ps(qd, load16(k[j] + d), part[j]);
  }
  return sum16x16(part);
}

inline void scale_row(float* acc, float s, int64_t n) {
  const __m512 sv = _mm512_set1_ps(s);
  for (int64_t d = 0; d < n; d += 16) _mm512_store_ps(acc + d, _mm512_mul_ps(_mm512_load_ps(acc + d), sv));
}

// One query row's running softmax: max score, denominator, sum of weighted values.
struct RowState {
  float* acc;  // [hd], 64-byte aligned
  float max_score;
  float denom;
};

// Online-softmax step of a row: one chunk's scores s (lanes >= n dead) become
// weights w[0..15] (dead lanes 0), rescaling the row's sums when its max moves.
inline void weigh(__m512 s, int n, int64_t hd, RowState* st, float* w) {
  const __mmask16 live = static_cast<__mmask16>((1u << n) - 1);
  s = _mm512_mask_blend_ps(live, _mm512_set1_ps(-std::numeric_limits<float>::infinity()), s);
  const float chunk_max = _mm512_reduce_max_ps(s);
  if (chunk_max > st->max_score) {
    const float rescale = std::exp(st->max_score - chunk_max);
    st->denom *= rescale;
    scale_row(st->acc, rescale, hd);
    st->max_score = chunk_max;
  }
  const __m512 e = _mm512_maskz_mov_ps(live, exp512(_mm512_sub_ps(s, _mm512_set1_ps(st->max_score))));
  st->denom += _mm512_reduce_add_ps(e);
  _mm512_store_ps(w, e);
}

// Online-softmax update of a row with one chunk's scores s (lanes >= n dead).
template <class T>
inline void update(__m512 s, int n, const T* const* v, int64_t hd, RowState* st) {
  alignas(64) float w[kChunk];
  weigh(s, n, hd, st, w);
  for (int64_t d = 0; d < hd; d += 16) {
    __m512 a = _mm512_load_ps(st->acc + d);
    for (int j = 0; j < n; ++j) a = _mm512_fmadd_ps(_mm512_set1_ps(w[j]), load16(v[j] + d), a);
    _mm512_store_ps(st->acc + d, a);
  }
}

// Rows acc[0..n-1] and their softmax states, empty: zero sums, no score seen.
inline void start_rows(int n, int64_t hd, float (*acc)[kMaxHeadDim], RowState* st) {
  for (int i = 0; i < n; ++i) {
    std::fill(acc[i], acc[i] + hd, 0.0f);
    st[i] = {acc[i], -std::numeric_limits<float>::infinity(), 0.0f};
  }
}

inline void finish(const RowState& st, int64_t hd, float* out) {
  const __m512 iv = _mm512_set1_ps(st.denom > 0.0f ? 1.0f / st.denom : 0.0f);
  for (int64_t d = 0; d < hd; d += 16) _mm512_storeu_ps(out + d, _mm512_mul_ps(_mm512_load_ps(st.acc + d), iv));
}

// Lane j: slope * (p0 + j).
inline __m512 position_bias(float slope, int64_t p0) {
  const __m512 pos = _mm512_add_ps(_mm512_set1_ps(static_cast<float>(p0)),
                                   _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  return _mm512_mul_ps(_mm512_set1_ps(slope), pos);
}

// One query head over all positions.
template <class T>
void attend_head(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope,
                 float* out) {
  alignas(64) float acc[1][kMaxHeadDim];
  RowState st;
  start_rows(1, hd, acc, &st);
  for (int64_t p0 = 0; p0 < n_pos; p0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, n_pos - p0));
    prefetch_next_block<T>(kv, p0, n_pos, hd);
    const T* k[kChunk];
    const T* v[kChunk];
    gather_kv_rows(kv, p0, n, k, v);
    update(_mm512_fmadd_ps(dots16(q, k, n, hd), _mm512_set1_ps(scale), position_bias(slope, p0)), n, v, hd, &st);
  }
  finish(st, hd, out);
}

// ---- rows over one KV head: the query heads of a KV head at one decode position,
// or consecutive query rows of one sequence (prefill). Each chunk's keys are
// transposed once and scored against every row, and each value row is loaded (and
// widened) once for every row ----

// kt[d * 16 + j] = k[j][d] for d < hd; 0 for j >= n.
template <class T>
inline void transpose_keys(const T* const* k, int n, int64_t hd, float* kt) {
  for (int64_t d0 = 0; d0 < hd; d0 += 16) {
    __m512 t[16];
    for (int j = 0; j < 16; ++j) t[j] = j < n ? load16(k[j] + d0) : _mm512_setzero_ps();
    transpose16(t);  // t[c] lane j = k[j][d0 + c]
    for (int c = 0; c < 16; ++c) _mm512_store_ps(kt + (d0 + c) * 16, t[c]);
  }
}

// Positions [p0, min(p0 + kChunk, n_pos)): their keys transposed into kt, their
// value rows in v; returns how many.
template <class T>
inline int transposed_chunk(const PagedKv& kv, int64_t p0, int64_t n_pos, int64_t hd, float* kt, const T** v) {
  const int n = static_cast<int>(std::min<int64_t>(kChunk, n_pos - p0));
  const T* k[kChunk];
  gather_kv_rows(kv, p0, n, k, v);
  transpose_keys(k, n, hd, kt);
  return n;
}

// scores[r] lane j = dot(q_r, k_j) for the R rows q + r * q_stride (kt: transposed keys).
// The sums leave the registers once, at the end: an array of vectors that the
// caller indexes by a loop variable lives on the stack, and GCC stored all R sums
// every dimension.
template <int R>
inline void dots_rows(const float* q, int64_t q_stride, const float* kt, int64_t hd, float (*scores)[16]) {
  constexpr int P = R >= 4 ? 1 : 4 / R;  // partial sums a row: 4+ FMA chains in flight (hd: a multiple of 16)
  __m512 s[R][P];
  for (int r = 0; r < R; ++r) {
    for (int p = 0; p < P; ++p) s[r][p] = _mm512_setzero_ps();
  }
  for (int64_t d = 0; d < hd; d += P) {
    for (int p = 0; p < P; ++p) {
      const __m512 kd = _mm512_load_ps(kt + (d + p) * 16);
      for (int r = 0; r < R; ++r) s[r][p] = _mm512_fmadd_ps(_mm512_set1_ps(q[r * q_stride + d + p]), kd, s[r][p]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int p = 1; p < P; ++p) s[r][0] = _mm512_add_ps(s[r][0], s[r][p]);
    _mm512_store_ps(scores[r], s[r][0]);
  }
}

// acc[r] += sum_j w[r][j] v[j] for the R rows (n live positions).
template <int R, class T>
inline void accumulate_rows(const float (*w)[kChunk], const T* const* v, int n, int64_t hd, float (*acc)[kMaxHeadDim]) {
  for (int64_t d = 0; d < hd; d += 16) {
    __m512 a[R];
    for (int r = 0; r < R; ++r) a[r] = _mm512_load_ps(acc[r] + d);
    for (int j = 0; j < n; ++j) {
      const __m512 vd = load16(v[j] + d);
      for (int r = 0; r < R; ++r) a[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[r][j]), vd, a[r]);
    }
    for (int r = 0; r < R; ++r) _mm512_store_ps(acc[r] + d, a[r]);
  }
}

// Rows 0..R-1 over the same KV head: row r (query q + r * q_stride, output out + r *
// out_stride) sees positions [0, n_vis[r]) (n_vis[r] >= 1) with ALiBi slope slopes[r].
// Flattened: with 32 instantiations GCC stopped inlining the chunk's pieces (the
// gather, the transpose, the softmax step), and each call cost the loop the exp
// constants it keeps in registers (BM_Attend at group 4 and 8).
template <int R, class T>
[[gnu::flatten]] void attend_block(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                  float scale, const float* slopes, float* out, int64_t out_stride) {
  alignas(64) float kt[kMaxHeadDim * 16];
  alignas(64) float acc[R][kMaxHeadDim];
  alignas(64) float w[R][kChunk];
  RowState st[R];
  start_rows(R, hd, acc, st);
  int64_t n_pos = 0;
  for (int r = 0; r < R; ++r) n_pos = std::max(n_pos, n_vis[r]);
  for (int64_t p0 = 0; p0 < n_pos; p0 += kChunk) {
    prefetch_next_block<T>(kv, p0, n_pos, hd);
    const T* v[kChunk];
    const int n = transposed_chunk(kv, p0, n_pos, hd, kt, v);
    alignas(64) float s[R][16];
    dots_rows<R>(q, q_stride, kt, hd, s);
    for (int r = 0; r < R; ++r) {
      const int64_t visible = std::min<int64_t>(n, n_vis[r] - p0);
      if (visible <= 0) {  // the row's positions ended in an earlier chunk (causal rows)
        _mm512_store_ps(w[r], _mm512_setzero_ps());
        continue;
      }
      const __m512 sr = _mm512_fmadd_ps(_mm512_load_ps(s[r]), _mm512_set1_ps(scale), position_bias(slopes[r], p0));
      weigh(sr, static_cast<int>(visible), hd, &st[r], w[r]);
    }
    accumulate_rows<R>(w, v, n, hd, acc);
  }
  for (int r = 0; r < R; ++r) finish(st[r], hd, out + r * out_stride);
}

// attention_driver.h's kernels: decode heads go 8 at a time (8 accumulators a pass), one
// head alone on attend_head; prefill rows 16 at a time (each chunk's transpose shared by
// more rows).
struct Avx512Attention {
  static constexpr int kLanes = 16;
  static constexpr int kDecodeRows = 8;
  static constexpr int kCausalRows = 16;
  static constexpr int64_t kMinSharedRows = 2;
  template <class T, int nr>
  static void rows(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis, float scale,
                   const float* slopes, float* out, int64_t out_stride) {
    attend_block<nr, T>(q, q_stride, hd, kv, n_vis, scale, slopes, out, out_stride);
  }
  template <class T>
  static void row(const float* q, int64_t hd, const PagedKv& kv, int64_t n_pos, float scale, float slope, float* out) {
    attend_head<T>(q, hd, kv, n_pos, scale, slope, out);
  }
};

}  // namespace

void avx512_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                   const float* slopes, float* out) {
  attend_with<Avx512Attention>(q, group, head_dim, kv, n_pos, scale, slopes, out);
}

void avx512_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                          int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  attend_causal_with<Avx512Attention>(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
}

}  // namespace plimsoll::kernels
