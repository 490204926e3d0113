// AArch64 NEON twins of the f32 vector ops (dot_f32, axpy_f32, swiglu, sum_exp,
// f32_to_f16_row) and of attention (attend, attend_causal), for both ARM levels
// (plain NEON is the AArch64 baseline, so this file needs no extra flags).
// exp is the x86 paths' polynomial (vec_math_avx512.h) over 4 lanes.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/attention.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

// 2^n for integer-valued n in [-75, 64] (a normal float).
inline float32x4_t pow2(int32x4_t n) {
  return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23));
}

// exp(x) lane-wise: x = n ln2 + r, degree-6 polynomial for e^r (Cephes expf's
// coefficients), times 2^n in two factors so that subnormal results stay exact.
// ~2 ulp; x clamped to [-104, 88.72].
inline float32x4_t exp128(float32x4_t x) {
  x = vminq_f32(x, vdupq_n_f32(88.72f));
  x = vmaxq_f32(x, vdupq_n_f32(-104.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504088896341f));
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
  p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
  p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
  p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
  p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
  const int32x4_t ni = vcvtq_s32_f32(n);  // n is integral: exact
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  return vmulq_f32(vmulq_f32(p, pow2(n1)), pow2(vsubq_s32(ni, n1)));
}

// Lanes i < n set (n in 0..4).
inline uint32x4_t tail_mask(int64_t n) {
  const uint32_t lanes[4] = {0, 1, 2, 3};
  return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(n)));
}

// The first n (< 4) floats of p, zeros after.
inline float32x4_t load_tail(const float* p, int64_t n) {
  float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return vld1q_f32(buf);
}
inline void store_tail(float* p, float32x4_t v, int64_t n) {
  float buf[4];
  vst1q_f32(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
}

inline float32x4_t load4(const float* p) { return vld1q_f32(p); }
inline float32x4_t load4(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

// ---- attention -------------------------------------------------------------------
// Positions go in chunks of 4 (one float32x4 of scores per query row); up to 8
// query rows share each chunk's keys and values. Per chunk the 4 keys are
// transposed once into kt[d] (lane j: position j), so a row's 4 scores are
// head_dim FMLA-by-element (vfmaq_laneq_f32 with the query held in registers 4
// dims at a time), and each value row is loaded once for all rows.
constexpr int kChunk = 4;
constexpr int kBlockRows = 8;
constexpr int64_t kMaxHeadDim = 512;

inline void transpose4(float32x4_t (&r)[4]) {
  const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]), t23 = vtrnq_f32(r[2], r[3]);
  r[0] = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
  r[1] = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
  r[2] = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
  r[3] = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
}

// Query rows q_r = q + r * q_stride (r < nr <= kBlockRows) over one KV head: row r
// sees positions [0, n_vis[r]) (n_vis[r] >= 1) with ALiBi slope slopes[r]. Online
// softmax per row, as the scalar twin.
template <class T, int nr>
void attend_rows(const float* q, int64_t q_stride, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                 float scale, const float* slopes, float* out, int64_t out_stride) {
  alignas(16) float acc[kBlockRows][kMaxHeadDim];
  alignas(16) float kt[kMaxHeadDim * kChunk];
  alignas(16) float w[kBlockRows][kChunk];
  float max_score[kBlockRows], denom[kBlockRows];
  int64_t n_pos = 0;
  for (int r = 0; r < nr; ++r) {
    std::fill(acc[r], acc[r] + hd, 0.0f);
    max_score[r] = -std::numeric_limits<float>::infinity();
    denom[r] = 0.0f;
    n_pos = std::max(n_pos, n_vis[r]);
  }
  const T* keys = static_cast<const T*>(kv.keys);
  const T* values = static_cast<const T*>(kv.values);
  const float lane_pos_init[4] = {0, 1, 2, 3};
  const float32x4_t lane_pos = vld1q_f32(lane_pos_init);
  const float32x4_t neg_inf = vdupq_n_f32(-std::numeric_limits<float>::infinity());
  int64_t block = 0, row = 0;
  for (int64_t p0 = 0; p0 < n_pos; p0 += kChunk) {
    const int n = static_cast<int>(std::min<int64_t>(kChunk, n_pos - p0));
    const T* k[kChunk];
    const T* v[kChunk];
    for (int j = 0; j < n; ++j, ++row) {
      if (row == kv.block_tokens) {
        row = 0;
        ++block;
      }
      const int64_t off = kv.blocks[block] * kv.block_stride + row * kv.pos_stride;
      k[j] = keys + off;
      v[j] = values + off;
    }
    for (int64_t d0 = 0; d0 < hd; d0 += 4) {
      float32x4_t t[4];
      for (int j = 0; j < kChunk; ++j) t[j] = j < n ? load4(k[j] + d0) : vdupq_n_f32(0.0f);
      transpose4(t);
      for (int i = 0; i < 4; ++i) vst1q_f32(kt + (d0 + i) * kChunk, t[i]);
    }
    float32x4_t s[nr];
    for (int r = 0; r < nr; ++r) s[r] = vdupq_n_f32(0.0f);
    for (int64_t d = 0; d < hd; d += 4) {
      const float32x4_t k0 = vld1q_f32(kt + d * kChunk), k1 = vld1q_f32(kt + (d + 1) * kChunk);
      const float32x4_t k2 = vld1q_f32(kt + (d + 2) * kChunk), k3 = vld1q_f32(kt + (d + 3) * kChunk);
      for (int r = 0; r < nr; ++r) {
        const float32x4_t qv = vld1q_f32(q + r * q_stride + d);
        s[r] = vfmaq_laneq_f32(s[r], k0, qv, 0);
        s[r] = vfmaq_laneq_f32(s[r], k1, qv, 1);
        s[r] = vfmaq_laneq_f32(s[r], k2, qv, 2);
        s[r] = vfmaq_laneq_f32(s[r], k3, qv, 3);
      }
    }
    for (int r = 0; r < nr; ++r) {
      const int64_t live_n = std::min<int64_t>(n, n_vis[r] - p0);
      if (live_n <= 0) {  // the row's positions ended in an earlier chunk
        vst1q_f32(w[r], vdupq_n_f32(0.0f));
        continue;
      }
      float32x4_t sr = vmulq_n_f32(s[r], scale);
      if (slopes[r] != 0.0f) {
        sr = vfmaq_n_f32(sr, vaddq_f32(lane_pos, vdupq_n_f32(static_cast<float>(p0))), slopes[r]);
      }
      const uint32x4_t live = tail_mask(live_n);
      sr = vbslq_f32(live, sr, neg_inf);
      const float chunk_max = vmaxvq_f32(sr);
      if (chunk_max > max_score[r]) {
        const float rescale = std::exp(max_score[r] - chunk_max);
        denom[r] *= rescale;
        for (int64_t d = 0; d < hd; d += 4) vst1q_f32(acc[r] + d, vmulq_n_f32(vld1q_f32(acc[r] + d), rescale));
        max_score[r] = chunk_max;
      }
      const float32x4_t e = vreinterpretq_f32_u32(
          vandq_u32(vreinterpretq_u32_f32(exp128(vsubq_f32(sr, vdupq_n_f32(max_score[r])))), live));
      denom[r] += vaddvq_f32(e);
      vst1q_f32(w[r], e);
    }
    for (int64_t d = 0; d < hd; d += 4) {
      float32x4_t a[nr];
      for (int r = 0; r < nr; ++r) a[r] = vld1q_f32(acc[r] + d);
      for (int j = 0; j < n; ++j) {
        const float32x4_t vj = load4(v[j] + d);
        for (int r = 0; r < nr; ++r) a[r] = vfmaq_n_f32(a[r], vj, w[r][j]);
      }
      for (int r = 0; r < nr; ++r) vst1q_f32(acc[r] + d, a[r]);
    }
  }
  for (int r = 0; r < nr; ++r) {
    const float inv = denom[r] > 0.0f ? 1.0f / denom[r] : 0.0f;
    for (int64_t d = 0; d < hd; d += 4) vst1q_f32(out + r * out_stride + d, vmulq_n_f32(vld1q_f32(acc[r] + d), inv));
  }
}

template <class T>
void attend_rows_n(const float* q, int64_t q_stride, int nr, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                   float scale, const float* slopes, float* out, int64_t out_stride) {
  static_assert(kBlockRows == 8);
  using Fn = void (*)(const float*, int64_t, int64_t, const PagedKv&, const int64_t*, float, const float*, float*,
                      int64_t);
  static constexpr Fn kByRows[kBlockRows] = {attend_rows<T, 1>, attend_rows<T, 2>, attend_rows<T, 3>,
                                             attend_rows<T, 4>, attend_rows<T, 5>, attend_rows<T, 6>,
                                             attend_rows<T, 7>, attend_rows<T, 8>};
  kByRows[nr - 1](q, q_stride, hd, kv, n_vis, scale, slopes, out, out_stride);
}

void attend_rows_any(const float* q, int64_t q_stride, int nr, int64_t hd, const PagedKv& kv, const int64_t* n_vis,
                     float scale, const float* slopes, float* out, int64_t out_stride) {
  if (kv.dtype == DType::kF16) return attend_rows_n<uint16_t>(q, q_stride, nr, hd, kv, n_vis, scale, slopes, out, out_stride);
  attend_rows_n<float>(q, q_stride, nr, hd, kv, n_vis, scale, slopes, out, out_stride);
}

bool neon_fits(int64_t head_dim) { return head_dim % 4 == 0 && head_dim <= kMaxHeadDim; }

}  // namespace

void neon_attend(const float* q, int64_t group, int64_t head_dim, const PagedKv& kv, int64_t n_pos, float scale,
                 const float* slopes, float* out) {
  if (!neon_fits(head_dim)) return attend_scalar(q, group, head_dim, kv, n_pos, scale, slopes, out);
  int64_t n_vis[kBlockRows];
  std::fill(n_vis, n_vis + kBlockRows, n_pos);
  for (int64_t g0 = 0; g0 < group; g0 += kBlockRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kBlockRows, group - g0));
    float sl[kBlockRows] = {};
    for (int r = 0; r < nr; ++r) sl[r] = slopes != nullptr ? slopes[g0 + r] : 0.0f;
    attend_rows_any(q + g0 * head_dim, head_dim, nr, head_dim, kv, n_vis, scale, sl, out + g0 * head_dim, head_dim);
  }
}

void neon_attend_causal(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const PagedKv& kv,
                        int64_t first_pos, float scale, const float* slope, float* out, int64_t out_stride) {
  if (!neon_fits(head_dim)) {
    return attend_causal_scalar(q, q_stride, n_q, head_dim, kv, first_pos, scale, slope, out, out_stride);
  }
  float sl[kBlockRows];
  std::fill(sl, sl + kBlockRows, slope != nullptr ? *slope : 0.0f);
  for (int64_t i0 = 0; i0 < n_q; i0 += kBlockRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kBlockRows, n_q - i0));
    int64_t n_vis[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) n_vis[r] = first_pos + i0 + r + 1;
    attend_rows_any(q + i0 * q_stride, q_stride, nr, head_dim, kv, n_vis, scale, sl, out + i0 * out_stride,
                    out_stride);
  }
}

// ---- element-wise ops ------------------------------------------------------------
float neon_dot_f32(const float* a, const float* b, int64_t n) {
  float32x4_t acc[4] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int k = 0; k < 4; ++k) acc[k] = vfmaq_f32(acc[k], vld1q_f32(a + i + 4 * k), vld1q_f32(b + i + 4 * k));
  }
  for (; i + 4 <= n; i += 4) acc[0] = vfmaq_f32(acc[0], vld1q_f32(a + i), vld1q_f32(b + i));
  if (i < n) acc[1] = vfmaq_f32(acc[1], load_tail(a + i, n - i), load_tail(b + i, n - i));
  return vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
}

void neon_axpy_f32(float* y, float a, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    // the product rounded before the add, as the scalar loop (the asm barrier
    // keeps GCC from fusing mul and add into FMLA)
    float32x4_t prod = vmulq_n_f32(vld1q_f32(x + i), a);
    __asm__("" : "+w"(prod));
    vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), prod));
  }
  for (; i < n; ++i) {
    float prod = a * x[i];
    __asm__("" : "+w"(prod));
    y[i] += prod;
  }
}

// FCVTN rounds to nearest even (FPCR's default mode), as f32_to_f16.
void neon_f32_to_f16_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
  if (i < n) {
    uint16_t buf[4];
    vst1_u16(buf, vreinterpret_u16_f16(vcvt_f16_f32(load_tail(src + i, n - i))));
    std::memcpy(dst + i, buf, static_cast<size_t>(n - i) * sizeof(uint16_t));
  }
}

void neon_swiglu(float* out, const float* gate, const float* up, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  for (int64_t i = 0; i < n; i += 4) {
    const bool full = i + 4 <= n;
    const float32x4_t g = full ? vld1q_f32(gate + i) : load_tail(gate + i, n - i);
    const float32x4_t u = full ? vld1q_f32(up + i) : load_tail(up + i, n - i);
    const float32x4_t sig = vdivq_f32(one, vaddq_f32(one, exp128(vnegq_f32(g))));
    const float32x4_t r = vmulq_f32(vmulq_f32(g, sig), u);
    if (full) {
      vst1q_f32(out + i, r);
    } else {
      store_tail(out + i, r, n - i);
    }
  }
}

// Each vector of 4 exps is added into 2 + 2 double lanes (the scalar twin's precision).
double neon_sum_exp(const float* x, int64_t n, float shift) {
  float64x2_t acc0 = vdupq_n_f64(0.0), acc1 = vdupq_n_f64(0.0);
  for (int64_t i = 0; i < n; i += 4) {
    const bool full = i + 4 <= n;
    float32x4_t e = exp128(vsubq_f32(full ? vld1q_f32(x + i) : load_tail(x + i, n - i), vdupq_n_f32(shift)));
    if (!full) e = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(e), tail_mask(n - i)));
    acc0 = vaddq_f64(acc0, vcvt_f64_f32(vget_low_f32(e)));
    acc1 = vaddq_f64(acc1, vcvt_high_f64_f32(e));
  }
  const float64x2_t s = vaddq_f64(acc0, acc1);
  return vgetq_lane_f64(s, 0) + vgetq_lane_f64(s, 1);
}

}  // namespace plimsoll::kernels
