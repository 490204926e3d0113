// The AArch64 NEON vector trait of the shared drivers (simd_ops.h, simd_math.h,
// simd_attention.h): 4 float lanes (Advanced SIMD is the AArch64 baseline: no extra
// flags). Internal linkage.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace plimsoll::kernels {
namespace {

struct NeonVec {
  using F = float32x4_t;
  using M = uint32x4_t;  // lanes set: all ones
  using D = float64x2_t;
  static constexpr int kLanes = 4;
  static constexpr int kDotAccs = 4, kDotTailAcc = 1;
  static constexpr int kSpanChunks = 1;  // attention: one softmax update per chunk of 4

  static F zero() { return vdupq_n_f32(0.0f); }
  static F set1(float x) { return vdupq_n_f32(x); }
  static F broadcast(const float* p) { return vdupq_n_f32(*p); }
  static F load(const float* p) { return vld1q_f32(p); }
  static F loadu(const float* p) { return vld1q_f32(p); }
  static F widen(const float* p) { return vld1q_f32(p); }
  static F widen(const uint16_t* p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
  static void store(float* p, F v) { vst1q_f32(p, v); }
  static void storeu(float* p, F v) { vst1q_f32(p, v); }
  // Lanes i < n set (any n).
  static M first(int64_t n) {
    const uint32_t lanes[4] = {0, 1, 2, 3};
    return vcltq_u32(vld1q_u32(lanes), vdupq_n_u32(static_cast<uint32_t>(std::clamp<int64_t>(n, 0, 4))));
  }
  // The first n (< 4) floats of p, zeros after; and their store.
  static F load_first(const float* p, int64_t n) {
    float buf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
    return vld1q_f32(buf);
  }
  static void store_first(float* p, F v, int64_t n) {
    float buf[4];
    vst1q_f32(buf, v);
    std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
  }
  static F select(M m, F set, F unset) { return vbslq_f32(m, set, unset); }
  static F keep(F x, M m) { return vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(x), m)); }
  static F add(F a, F b) { return vaddq_f32(a, b); }
  static F sub(F a, F b) { return vsubq_f32(a, b); }
  static F mul(F a, F b) { return vmulq_f32(a, b); }
  static F div(F a, F b) { return vdivq_f32(a, b); }
  static F min(F a, F b) { return vminq_f32(a, b); }
  static F max(F a, F b) { return vmaxq_f32(a, b); }
  static F fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }   // a * b + c
  static F fnma(F a, F b, F c) { return vfmsq_f32(c, a, b); }  // c - a * b
  // a * b rounded on its own (the asm barrier keeps GCC from fusing it into FMLA)
  static F mul_unfused(F a, F b) {
    F p = vmulq_f32(a, b);
    __asm__("" : "+w"(p));
    return p;
  }
  static F round(F x) { return vrndnq_f32(x); }
  // p * 2^n for simd_exp's integral n, as two exponent-field factors (each a normal float)
  static F ldexp(F p, F n) {
    const int32x4_t ni = vcvtq_s32_f32(n);  // n is integral: exact
    const int32x4_t n1 = vshrq_n_s32(ni, 1);
    return vmulq_f32(vmulq_f32(p, pow2(n1)), pow2(vsubq_s32(ni, n1)));
  }
  static float hsum(F v) { return vaddvq_f32(v); }
  static float hmax(F v) { return vmaxvq_f32(v); }
  static F lane_positions() {
    const float lanes[4] = {0, 1, 2, 3};
    return vld1q_f32(lanes);
  }
  static void transpose(F (&r)[4]) {
    const float32x4x2_t t01 = vtrnq_f32(r[0], r[1]), t23 = vtrnq_f32(r[2], r[3]);
    r[0] = vcombine_f32(vget_low_f32(t01.val[0]), vget_low_f32(t23.val[0]));
    r[1] = vcombine_f32(vget_low_f32(t01.val[1]), vget_low_f32(t23.val[1]));
    r[2] = vcombine_f32(vget_high_f32(t01.val[0]), vget_high_f32(t23.val[0]));
    r[3] = vcombine_f32(vget_high_f32(t01.val[1]), vget_high_f32(t23.val[1]));
  }
  // s[r] lane j = dot(q + r * q_stride, key j) over the transposed keys kt (kt[d * 4 + j]):
  // FMLA by element, the query held in registers 4 dimensions at a time.
  template <int nr>
  static void score_rows(const float* q, int64_t q_stride, const float* kt, int64_t hd, F (&s)[nr]) {
    for (int r = 0; r < nr; ++r) s[r] = vdupq_n_f32(0.0f);
    for (int64_t d = 0; d < hd; d += 4) {
      const F k0 = vld1q_f32(kt + d * kLanes), k1 = vld1q_f32(kt + (d + 1) * kLanes);
      const F k2 = vld1q_f32(kt + (d + 2) * kLanes), k3 = vld1q_f32(kt + (d + 3) * kLanes);
      for (int r = 0; r < nr; ++r) {
        const F qv = vld1q_f32(q + r * q_stride + d);
        s[r] = vfmaq_laneq_f32(s[r], k0, qv, 0);
        s[r] = vfmaq_laneq_f32(s[r], k1, qv, 1);
        s[r] = vfmaq_laneq_f32(s[r], k2, qv, 2);
        s[r] = vfmaq_laneq_f32(s[r], k3, qv, 3);
      }
    }
  }
  static D zero_d() { return vdupq_n_f64(0.0); }
  static void add_doubles(D& lo, D& hi, F e) {
    lo = vaddq_f64(lo, vcvt_f64_f32(vget_low_f32(e)));
    hi = vaddq_f64(hi, vcvt_high_f64_f32(e));
  }
  static double hsum_d(D lo, D hi) {
    const D s = vaddq_f64(lo, hi);
    return vgetq_lane_f64(s, 0) + vgetq_lane_f64(s, 1);
  }
  // FCVTN rounds to nearest even (FPCR's default mode), as f32_to_f16.
  static void store_f16(uint16_t* p, F v) { vst1_u16(p, vreinterpret_u16_f16(vcvt_f16_f32(v))); }
  static void store_f16_first(uint16_t* p, F v, int64_t n) {
    uint16_t h[4];
    store_f16(h, v);
    std::memcpy(p, h, static_cast<size_t>(n) * sizeof(uint16_t));
  }

 private:
  // 2^n for integer-valued n in [-75, 64] (a normal float).
  static F pow2(int32x4_t n) { return vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n, vdupq_n_s32(127)), 23)); }
};

}  // namespace
}  // namespace plimsoll::kernels
