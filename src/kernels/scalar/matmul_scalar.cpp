// The scalar twins of the matmul row kernels: the readable definition of the
// arithmetic every SIMD path reproduces (integer block dots, then f32 scaling).
#include <cstring>

#include "core/half.h"
#include "kernels/blocks.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

template <typename T>
const T* at(const std::byte* p, int64_t offset_bytes) {
  return reinterpret_cast<const T*>(p + offset_bytes);
}

// Float weights: plain f32 accumulation of converted weight * x, in column order.
template <typename W, float (*ToF32)(W)>
void dot_float(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
               int64_t cols, float* out) {
  const W* w = reinterpret_cast<const W*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const float* x = at<float>(acts, t * stride_bytes);  // [cols]
    float sum = 0.f;
    for (int64_t c = 0; c < cols; ++c) sum += ToF32(w[c]) * x[c];
    out[t] = sum;
  }
}

float f32_identity(float v) { return v; }

// Q8_0 / Q4_0 weights against Q8_0 activations:
//   y = sum_b (d_w[b] * d_x[b]) * sum_i q_w[b,i] * q_x[b,i]
inline int q4_0_value(const BlockQ4_0& b, int i) {
  return (i < 16 ? (b.qs[i] & 0xF) : (b.qs[i - 16] >> 4)) - 8;
}
inline int q8_0_value(const BlockQ8_0& b, int i) { return b.qs[i]; }
// The nibble (or 5-bit value) of element i of the other 32-element types.
inline int nibble(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 0xF) : (qs[i - 16] >> 4); }
inline int q5_value(const uint8_t* qs, const uint8_t (&qh)[4], int i) {
  return nibble(qs, i) | static_cast<int>(((q5_high_bits(qh) >> i) & 1) << 4);
}
inline int q5_0_value(const BlockQ5_0& b, int i) { return q5_value(b.qs, b.qh, i) - 16; }
inline int iq4_nl_value(const BlockIQ4NL& b, int i) { return kIQ4NLValues[nibble(b.qs, i)]; }
inline int q4_1_value(const BlockQ4_1& b, int i) { return nibble(b.qs, i); }
inline int q5_1_value(const BlockQ5_1& b, int i) { return q5_value(b.qs, b.qh, i); }

template <typename Block, int (*Value)(const Block&, int)>
void dot_q_x_q8_0(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
                  int64_t cols, float* out) {
  const Block* w = reinterpret_cast<const Block*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8_0* x = at<BlockQ8_0>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQK; ++b) {
      int sumi = 0;
      for (int i = 0; i < kQK; ++i) sumi += Value(w[b], i) * x[b].qs[i];
      sum += (f16_to_f32(w[b].d) * f16_to_f32(x[b].d)) * static_cast<float>(sumi);
    }
    out[t] = sum;
  }
}

// Q4_1 / Q5_1 (value = q * d + m) against Q8_0 activations:
//   y = sum_b (d_w[b] * d_x[b]) * sum_i q_w[b,i] * q_x[b,i] + (m_w[b] * d_x[b]) * sum_i q_x[b,i]
template <typename Block, int (*Value)(const Block&, int)>
void dot_qmin_x_q8_0(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
                     int64_t cols, float* out) {
  const Block* w = reinterpret_cast<const Block*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8_0* x = at<BlockQ8_0>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQK; ++b) {
      int sumi = 0, sumx = 0;
      for (int i = 0; i < kQK; ++i) {
        sumi += Value(w[b], i) * x[b].qs[i];
        sumx += x[b].qs[i];
      }
      const float dx = f16_to_f32(x[b].d);
      sum += (f16_to_f32(w[b].d) * dx) * static_cast<float>(sumi) + (f16_to_f32(w[b].m) * dx) * static_cast<float>(sumx);
    }
    out[t] = sum;
  }
}

// K-quants against Q8_K activations, per super-block:
//   y += (d_w * d_x) * isum - (dmin_w * d_x) * msum
// isum = sum_j scale[j] * sum_{i in j} q_w[i] * q_x[i]  (q_w without offset)
// msum = sum_j min[j] * (sum of q_x in sub-block j)      (Q4_K/Q5_K only)
inline float finish_block(float d_w, float dmin_w, float d_x, int32_t isum, int32_t msum) {
  return (d_w * d_x) * static_cast<float>(isum) - (dmin_w * d_x) * static_cast<float>(msum);
}

// Q4_K / Q5_K: the 4-bit part and optional 5th bit of element i of super-block b.
inline int q4k_value(const BlockQ4K& b, int i) {
  const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
  return (i % 64) < 32 ? (byte & 0xF) : (byte >> 4);
}
inline int q5k_value(const BlockQ5K& b, int i) {
  const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
  const int low = (i % 64) < 32 ? (byte & 0xF) : (byte >> 4);
  const int bit = 2 * (i / 64) + ((i % 64) < 32 ? 0 : 1);
  return low | (((b.qh[i % 32] >> bit) & 1) << 4);
}

template <typename Block, int (*Value)(const Block&, int)>
void dot_q45k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
              int64_t cols, float* out) {
  const Block* w = reinterpret_cast<const Block*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0, msum = 0;
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, w[b].scales, &sc, &m);
        int32_t s = 0;
        for (int i = 32 * j; i < 32 * j + 32; ++i) s += Value(w[b], i) * x[b].qs[i];
        isum += sc * s;
        msum += m * (x[b].bsums[2 * j] + x[b].bsums[2 * j + 1]);
      }
      sum += finish_block(f16_to_f32(w[b].d), f16_to_f32(w[b].dmin), x[b].d, isum, msum);
    }
    out[t] = sum;
  }
}

// Q6_K element i of super-block b, with its -32 offset.
inline int q6k_value(const BlockQ6K& b, int i) {
  const int half = i / 128, r = i % 128, l = r % 32, quarter = r / 32;
  const uint8_t* ql = b.ql + 64 * half;
  const uint8_t qh = b.qh[32 * half + l];
  const uint8_t lbyte = ql[l + (quarter & 1) * 32];
  const int low = quarter < 2 ? (lbyte & 0xF) : (lbyte >> 4);
  return (low | (((qh >> (2 * quarter)) & 3) << 4)) - 32;
}

void dot_q6k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
             int64_t cols, float* out) {
  const BlockQ6K* w = reinterpret_cast<const BlockQ6K*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0;
      for (int g = 0; g < 16; ++g) {
        int32_t s = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) s += q6k_value(w[b], i) * x[b].qs[i];
        isum += w[b].scales[g] * s;
      }
      sum += finish_block(f16_to_f32(w[b].d), 0.f, x[b].d, isum, 0);
    }
    out[t] = sum;
  }
}

// Q3_K against Q8_K: isum = sum_g (scale[g] - 32) * sum_{i in g} q_w[i] * q_x[i], 16 elements a group.
void dot_q3k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
             int64_t cols, float* out) {
  const BlockQ3K* w = reinterpret_cast<const BlockQ3K*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0;
      for (int g = 0; g < 16; ++g) {
        int32_t s = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) s += q3k_value(w[b], i) * x[b].qs[i];
        isum += (q3k_scale(w[b], g) - 32) * s;
      }
      sum += finish_block(f16_to_f32(w[b].d), 0.f, x[b].d, isum, 0);
    }
    out[t] = sum;
  }
}

// Q2_K against Q8_K: as Q4_K with a scale and a min per 16 elements.
void dot_q2k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
             int64_t cols, float* out) {
  const BlockQ2K* w = reinterpret_cast<const BlockQ2K*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0, msum = 0;
      for (int g = 0; g < 16; ++g) {
        int32_t s = 0;
        for (int i = 16 * g; i < 16 * g + 16; ++i) s += q2k_value(w[b], i) * x[b].qs[i];
        isum += (w[b].scales[g] & 0xF) * s;
        msum += (w[b].scales[g] >> 4) * x[b].bsums[g];
      }
      sum += finish_block(f16_to_f32(w[b].d), f16_to_f32(w[b].dmin), x[b].d, isum, msum);
    }
    out[t] = sum;
  }
}

// IQ4_XS against Q8_K: isum = sum_b (scale[b] - 32) * sum_{i in b} value[i] * q_x[i].
void dot_iq4_xs(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
                int64_t cols, float* out) {
  const BlockIQ4XS* w = reinterpret_cast<const BlockIQ4XS*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t sb = 0; sb < cols / kQKK; ++sb) {
      int32_t isum = 0;
      for (int b = 0; b < kQKK / kQK; ++b) {
        int32_t s = 0;
        for (int i = 0; i < kQK; ++i) s += kIQ4NLValues[nibble(w[sb].qs + 16 * b, i)] * x[sb].qs[kQK * b + i];
        isum += (iq4xs_scale(w[sb], b) - 32) * s;
      }
      sum += finish_block(f16_to_f32(w[sb].d), 0.f, x[sb].d, isum, 0);
    }
    out[t] = sum;
  }
}

// The grid i-quants against Q8_K (blocks.h's IqGroup): per super-block
//   isum = sum_g sum_i scale[g, i / 16] * value[g, i] * q_x[32g + i]
//   y += (d_w * d_x * kIqFactor) * isum  (kIqFactor a power of two: exact)
template <typename Block>
void dot_iq(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok, int64_t cols,
            float* out) {
  const Block* w = reinterpret_cast<const Block*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0;
      for (int g = 0; g < kQKK / 32; ++g) {
        const IqGroup q = iq_group(w[b], g);
        for (int h = 0; h < 2; ++h) {
          int32_t s = 0;
          for (int i = 16 * h; i < 16 * h + 16; ++i) s += iq_value(q, i, kIqOneBit<Block>) * x[b].qs[32 * g + i];
          isum += q.scale[h] * s;
        }
      }
      sum += (f16_to_f32(iq_super_scale(w[b])) * x[b].d * kIqFactor<Block>) * static_cast<float>(isum);
    }
    out[t] = sum;
  }
}

void dot_q8k(const std::byte* w_row, const std::byte* acts, int64_t stride_bytes, int n_tok,
             int64_t cols, float* out) {
  const BlockQ8K* w = reinterpret_cast<const BlockQ8K*>(w_row);
  for (int t = 0; t < n_tok; ++t) {
    const BlockQ8K* x = at<BlockQ8K>(acts, t * stride_bytes);
    float sum = 0.f;
    for (int64_t b = 0; b < cols / kQKK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQKK; ++i) isum += w[b].qs[i] * x[b].qs[i];
      sum += finish_block(w[b].d, 0.f, x[b].d, isum, 0);
    }
    out[t] = sum;
  }
}

RowKernels make_scalar() {
  RowKernels k;
  k.fn[static_cast<int>(DType::kF32)] = dot_float<float, f32_identity>;
  k.fn[static_cast<int>(DType::kF16)] = dot_float<uint16_t, f16_to_f32>;
  k.fn[static_cast<int>(DType::kBF16)] = dot_float<uint16_t, bf16_to_f32>;
  k.fn[static_cast<int>(DType::kQ8_0)] = dot_q_x_q8_0<BlockQ8_0, q8_0_value>;
  k.fn[static_cast<int>(DType::kQ4_0)] = dot_q_x_q8_0<BlockQ4_0, q4_0_value>;
  k.fn[static_cast<int>(DType::kQ4_K)] = dot_q45k<BlockQ4K, q4k_value>;
  k.fn[static_cast<int>(DType::kQ5_K)] = dot_q45k<BlockQ5K, q5k_value>;
  k.fn[static_cast<int>(DType::kQ6_K)] = dot_q6k;
  k.fn[static_cast<int>(DType::kQ8_K)] = dot_q8k;
  k.fn[static_cast<int>(DType::kQ4_1)] = dot_qmin_x_q8_0<BlockQ4_1, q4_1_value>;
  k.fn[static_cast<int>(DType::kQ5_0)] = dot_q_x_q8_0<BlockQ5_0, q5_0_value>;
  k.fn[static_cast<int>(DType::kQ5_1)] = dot_qmin_x_q8_0<BlockQ5_1, q5_1_value>;
  k.fn[static_cast<int>(DType::kIQ4_NL)] = dot_q_x_q8_0<BlockIQ4NL, iq4_nl_value>;
  k.fn[static_cast<int>(DType::kIQ4_XS)] = dot_iq4_xs;
  k.fn[static_cast<int>(DType::kQ3_K)] = dot_q3k;
  k.fn[static_cast<int>(DType::kQ2_K)] = dot_q2k;
  k.fn[static_cast<int>(DType::kIQ2_XXS)] = dot_iq<BlockIQ2XXS>;
  k.fn[static_cast<int>(DType::kIQ2_XS)] = dot_iq<BlockIQ2XS>;
  k.fn[static_cast<int>(DType::kIQ3_XXS)] = dot_iq<BlockIQ3XXS>;
  k.fn[static_cast<int>(DType::kIQ1_S)] = dot_iq<BlockIQ1S>;
  k.fn[static_cast<int>(DType::kIQ3_S)] = dot_iq<BlockIQ3S>;
  k.fn[static_cast<int>(DType::kIQ2_S)] = dot_iq<BlockIQ2S>;
  k.fn[static_cast<int>(DType::kIQ1_M)] = dot_iq<BlockIQ1M>;
  return k;
}

}  // namespace

const RowKernels& scalar_row_kernels() {
  static const RowKernels kernels = make_scalar();
  return kernels;
}

}  // namespace plimsoll::kernels
