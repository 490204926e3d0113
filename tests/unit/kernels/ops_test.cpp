// The f32 element-wise ops against straightforward double-precision formulas.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernel_test_util.h"
#include "kernels/attention.h"

namespace plimsoll::kernels {
namespace {

using testing::random_floats;

TEST(Ops, RmsNorm) {
  const int64_t n = 300;
  const std::vector<float> x = random_floats(n, 1), w = random_floats(n, 2);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
  std::vector<float> out(static_cast<size_t>(n));
  rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[size_t(i)], x[size_t(i)] * inv * w[size_t(i)], 1e-5) << i;
  std::vector<float> in_place = x;  // out may alias x
  rmsnorm(in_place.data(), in_place.data(), w.data(), n, 1e-5f);
  EXPECT_EQ(in_place, out);
}

TEST(Ops, SoftmaxSumsToOneAndIsShiftInvariant) {
  std::vector<float> x = random_floats(50, 3, 5.f);
  x[7] = 1000.f;  // no overflow: the max is subtracted first
  std::vector<double> want(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += (want[i] = std::exp(double(x[i]) - 1000.0));
  softmax(x.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(x[i], want[i] / sum, 1e-7) << i;
}

void expect_rope(bool interleaved) {
  const int64_t head_dim = 64, pos = 1234;
  const float theta = 10000.f;
  const std::vector<float> x = random_floats(head_dim, 4);
  std::vector<float> y = x;
  rope(y.data(), head_dim, pos, theta, interleaved);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    const double angle = pos * std::pow(double(theta), -2.0 * double(i) / double(head_dim));
    const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + head_dim / 2;
    const double x0 = x[size_t(a)], x1 = x[size_t(b)];
    EXPECT_NEAR(y[size_t(a)], x0 * std::cos(angle) - x1 * std::sin(angle), 1e-5) << i;
    EXPECT_NEAR(y[size_t(b)], x0 * std::sin(angle) + x1 * std::cos(angle), 1e-5) << i;
  }
}

TEST(Ops, RopeInterleaved) { expect_rope(true); }
TEST(Ops, RopeHalfSplit) { expect_rope(false); }

TEST(Ops, RopeAtPositionZeroIsIdentity) {
  std::vector<float> x = random_floats(16, 5), y = x;
  rope(y.data(), 16, 0, 10000.f, true);
  EXPECT_EQ(x, y);
}

// Every ISA path (AVX-512 uses a polynomial exp) against the double formula,
// lengths around the 16-lane step, gates out to +-100 (exp under/overflow).
TEST(Ops, SwiGluOnEveryIsa) {
  testing::IsaGuard guard;
  for (int64_t n : {1, 15, 16, 17, 40, 100}) {
    std::vector<float> g = random_floats(n, 6, 4.f);
    const std::vector<float> u = random_floats(n, 7);
    g[0] = n > 1 ? 100.f : -100.f;
    for (Isa isa : testing::available_isas()) {
      ASSERT_TRUE(set_isa(isa));
      std::vector<float> out(static_cast<size_t>(n));
      swiglu(out.data(), g.data(), u.data(), n);
      for (size_t i = 0; i < size_t(n); ++i) {
        const double silu = g[i] / (1.0 + std::exp(-double(g[i])));
        EXPECT_NEAR(out[i], silu * u[i], 1e-5 * (1 + std::fabs(silu * u[i]))) << isa_name(isa) << " i " << i;
      }
    }
  }
}

// sum_exp on every ISA against a double sum: lengths around the 32- and
// 16-element steps up to a vocabulary, values far below the shift (terms that
// underflow to 0) and at it (terms of 1).
TEST(Ops, SumExpOnEveryIsa) {
  testing::IsaGuard guard;
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 100, 32000}) {
    std::vector<float> x = random_floats(n, 8, 6.f);
    x[0] = -200.f;
    const float shift = *std::max_element(x.begin(), x.end());
    double want = 0.0;
    for (float v : x) want += std::exp(double(v) - double(shift));
    for (Isa isa : testing::available_isas()) {
      ASSERT_TRUE(set_isa(isa));
      EXPECT_NEAR(sum_exp(x.data(), n, shift), want, 5e-7 * want) << isa_name(isa) << " n " << n;
    }
  }
}

TEST(Ops, LayerNorm) {
  const int64_t n = 300;
  const std::vector<float> x = random_floats(n, 11, 3.f), w = random_floats(n, 12), b = random_floats(n, 13);
  double mean = 0, var = 0;
  for (float v : x) mean += v;
  mean /= n;
  for (float v : x) var += (v - mean) * (v - mean);
  const double inv = 1.0 / std::sqrt(var / n + 1e-5);
  std::vector<float> out(static_cast<size_t>(n));
  layernorm(out.data(), x.data(), w.data(), b.data(), n, 1e-5f);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(out[size_t(i)], (x[size_t(i)] - mean) * inv * w[size_t(i)] + b[size_t(i)], 1e-5) << i;
  }
  std::vector<float> in_place = x;  // out may alias x; bias may be null
  layernorm(in_place.data(), in_place.data(), w.data(), nullptr, n, 1e-5f);
  for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(in_place[size_t(i)], out[size_t(i)] - b[size_t(i)], 1e-5) << i;
}

TEST(Ops, GeluTanhAndBias) {
  std::vector<float> x = {-3.f, -1.f, -0.1f, 0.f, 0.5f, 2.f, 6.f};
  const std::vector<float> in = x;
  gelu_tanh(x.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = in[i];
    const double want = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(x[i], want, 1e-6) << v;
  }
  std::vector<float> y = {1, 2, 3, 4, 5, 6};
  const std::vector<float> bias = {10, 20, 30};
  add_bias(y.data(), bias.data(), 2, 3);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 33, 14, 25, 36}));
}

TEST(Ops, DotAndAxpy) {
  const std::vector<float> a = random_floats(77, 8), b = random_floats(77, 9);
  double want = 0;
  for (size_t i = 0; i < 77; ++i) want += double(a[i]) * b[i];
  EXPECT_NEAR(dot_f32(a.data(), b.data(), 77), want, 1e-4);
  std::vector<float> y = b;
  axpy_f32(y.data(), 0.5f, a.data(), 77);
  for (size_t i = 0; i < 77; ++i) EXPECT_FLOAT_EQ(y[i], b[i] + 0.5f * a[i]);
}

// dot_f32 / axpy_f32 on every ISA path (AVX-512 has its own twins) for lengths
// around the 16- and 32-lane steps: axpy bit-identical (mul, then add), dot
// within 1e-6 of sum |a*b| of the scalar loop (only the summation order differs).
TEST(Ops, DotAndAxpyMatchScalarOnEveryIsa) {
  testing::IsaGuard guard;
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 64, 100, 128}) {
    const std::vector<float> a = random_floats(n, 10 + uint32_t(n)), b = random_floats(n, 20 + uint32_t(n));
    ASSERT_TRUE(set_isa(Isa::kScalar));
    const float dot_ref = dot_f32(a.data(), b.data(), n);
    std::vector<float> y_ref = b;
    axpy_f32(y_ref.data(), -0.37f, a.data(), n);
    double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(double(a[size_t(i)]) * b[size_t(i)]);
    for (Isa isa : testing::available_isas()) {
      ASSERT_TRUE(set_isa(isa));
      EXPECT_NEAR(dot_f32(a.data(), b.data(), n), dot_ref, 1e-6 * abs_sum) << isa_name(isa) << " n " << n;
      std::vector<float> y = b;
      axpy_f32(y.data(), -0.37f, a.data(), n);
      EXPECT_EQ(y, y_ref) << isa_name(isa) << " n " << n;
    }
  }
}

constexpr float kAlibiSlope = 0.25f;

// A KV arena as the kernels read it in `dtype` (f32 or f16), and the same
// values as floats (rounded through f16 for kF16) for the references to read.
struct KvArena {
  std::vector<float> values;     // what a reference reads
  std::vector<uint16_t> halves;  // kF16's storage
  DType dtype;

  KvArena(std::vector<float> v, DType d) : values(std::move(v)), dtype(d) {
    if (dtype != DType::kF16) return;
    halves.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) values[i] = f16_to_f32(halves[i] = f32_to_f16(values[i]));
  }
  // PagedKv over element `keys_at` (keys) and `values_at` (values) of the arena.
  PagedKv paged(int64_t keys_at, int64_t values_at) const {
    PagedKv kv;
    kv.dtype = dtype;
    if (dtype == DType::kF16) {
      kv.keys = halves.data() + keys_at;
      kv.values = halves.data() + values_at;
    } else {
      kv.keys = values.data() + keys_at;
      kv.values = values.data() + values_at;
    }
    return kv;
  }
};

// attend() on every ISA path, over f32 and f16 KV, against a two-pass softmax
// in double over the same paged layout (and the same f16-rounded values):
// blocks out of order, group sizes 1, 3, 8 (one register slice) and 20 (two
// full slices and a partial one), ALiBi slopes or none, lengths around
// the 16-position chunks and the block size, scores large enough that the
// running max moves.
TEST(Ops, AttendMatchesTwoPassSoftmaxOnEveryIsa) {
  testing::IsaGuard guard;
  const int64_t bt = 16, n_blocks = 9;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    for (int64_t hd : {8, 16, 64, 128, 256}) {
      for (int64_t group : {1, 3, 8, 20}) {
        const int64_t n_kv_heads = 2, kv_dim = n_kv_heads * hd, stride = 2 * bt * kv_dim;  // block: keys, then values
        const KvArena arena(random_floats(n_blocks * stride, uint32_t(hd + group), 1.f), dtype);
        const std::vector<int32_t> blocks = {4, 0, 7, 2, 8, 1, 6, 3, 5};
        const std::vector<float> q = random_floats(group * hd, uint32_t(100 + hd), 3.f);
        std::vector<float> slopes;
        for (int64_t g = 0; g < group; ++g) slopes.push_back(0.5f / float(g + 1));
        for (int64_t n_pos : {1, 15, 16, 17, 33, 100, 144}) {
          for (bool alibi : {false, true}) {
            const int64_t kvh = 1;
            PagedKv kv = arena.paged(kvh * hd, bt * kv_dim + kvh * hd);
            kv.blocks = blocks.data();
            kv.block_stride = stride;
            kv.block_tokens = bt;
            kv.pos_stride = kv_dim;
            const float* keys = arena.values.data() + kvh * hd;
            const float* values = arena.values.data() + bt * kv_dim + kvh * hd;
            const float scale = 1.0f / std::sqrt(float(hd));
            std::vector<double> want(static_cast<size_t>(group * hd), 0.0);
            for (int64_t g = 0; g < group; ++g) {
              std::vector<double> s(static_cast<size_t>(n_pos));
              double max_s = -1e300, sum = 0;
              for (int64_t p = 0; p < n_pos; ++p) {
                const float* k = keys + blocks[size_t(p / bt)] * stride + (p % bt) * kv_dim;
                double dot = 0;
                for (int64_t d = 0; d < hd; ++d) dot += double(q[size_t(g * hd + d)]) * k[d];
                s[size_t(p)] = dot * scale + (alibi ? double(slopes[size_t(g)]) * double(p) : 0.0);
                max_s = std::max(max_s, s[size_t(p)]);
              }
              for (double& v : s) sum += (v = std::exp(v - max_s));
              for (int64_t p = 0; p < n_pos; ++p) {
                const float* v = values + blocks[size_t(p / bt)] * stride + (p % bt) * kv_dim;
                for (int64_t d = 0; d < hd; ++d) want[size_t(g * hd + d)] += s[size_t(p)] / sum * v[d];
              }
            }
            for (Isa isa : testing::available_isas()) {
              ASSERT_TRUE(set_isa(isa));
              std::vector<float> out(static_cast<size_t>(group * hd), -1.f);
              attend(q.data(), group, hd, kv, n_pos, scale, alibi ? slopes.data() : nullptr, out.data());
              for (size_t i = 0; i < out.size(); ++i) {
                ASSERT_NEAR(out[i], want[i], 2e-5) << isa_name(isa) << " " << dtype_name(dtype) << " hd " << hd
                                                   << " group " << group << " n_pos " << n_pos << " alibi " << alibi
                                                   << " i " << i;
              }
            }
          }
        }
      }
    }
  }
}

// attend_window_scalar(): positions first..n_pos-1 only, scores soft-capped
// (cap * tanh(score / cap)) or not, against a two-pass softmax in double; with
// first 0 and no cap it is attend_scalar exactly.
TEST(Ops, AttendWindowScalarMatchesTwoPassSoftmax) {
  const int64_t bt = 16, n_blocks = 9, hd = 16, group = 3, kv_dim = 2 * hd, stride = 2 * bt * kv_dim;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    const KvArena arena(random_floats(n_blocks * stride, 7u, 1.f), dtype);
    const std::vector<int32_t> blocks = {4, 0, 7, 2, 8, 1, 6, 3, 5};
    const std::vector<float> q = random_floats(group * hd, 8u, 3.f);
    PagedKv kv = arena.paged(hd, bt * kv_dim + hd);
    kv.blocks = blocks.data();
    kv.block_stride = stride;
    kv.block_tokens = bt;
    kv.pos_stride = kv_dim;
    const float* keys = arena.values.data() + hd;
    const float* values = arena.values.data() + bt * kv_dim + hd;
    const float scale = 0.3f;
    for (int64_t n_pos : {1, 17, 100}) {
      for (int64_t first : {int64_t{0}, n_pos / 2, n_pos - 1}) {
        for (float cap : {0.0f, 1.5f}) {
          std::vector<double> want(static_cast<size_t>(group * hd), 0.0);
          for (int64_t g = 0; g < group; ++g) {
            std::vector<double> s(static_cast<size_t>(n_pos), 0.0);
            double max_s = -1e300, sum = 0;
            for (int64_t p = first; p < n_pos; ++p) {
              const float* k = keys + blocks[size_t(p / bt)] * stride + (p % bt) * kv_dim;
              double dot = 0;
              for (int64_t d = 0; d < hd; ++d) dot += double(q[size_t(g * hd + d)]) * k[d];
              s[size_t(p)] = cap > 0 ? cap * std::tanh(dot * scale / cap) : dot * scale;
              max_s = std::max(max_s, s[size_t(p)]);
            }
            for (int64_t p = first; p < n_pos; ++p) sum += (s[size_t(p)] = std::exp(s[size_t(p)] - max_s));
            for (int64_t p = first; p < n_pos; ++p) {
              const float* v = values + blocks[size_t(p / bt)] * stride + (p % bt) * kv_dim;
              for (int64_t d = 0; d < hd; ++d) want[size_t(g * hd + d)] += s[size_t(p)] / sum * v[d];
            }
          }
          std::vector<float> out(static_cast<size_t>(group * hd), -1.f);
          attend_window_scalar(q.data(), group, hd, kv, first, n_pos, scale, cap, out.data());
          for (size_t i = 0; i < out.size(); ++i) {
            ASSERT_NEAR(out[i], want[i], 2e-5) << dtype_name(dtype) << " n_pos " << n_pos << " first " << first
                                               << " cap " << cap << " i " << i;
          }
          if (first == 0 && cap == 0.0f) {
            std::vector<float> plain(out.size());
            attend_scalar(q.data(), group, hd, kv, n_pos, scale, nullptr, plain.data());
            EXPECT_EQ(plain, out);
          }
        }
      }
    }
  }
}

// attend_causal() (consecutive query rows of one sequence) on every ISA path,
// over f32 and f16 KV, against attend_scalar row by row: rows around the
// 16-row blocks, runs that start mid-sequence, blocks of 5 positions (chunks
// straddle blocks), ALiBi.
TEST(Ops, AttendCausalMatchesAttendRowByRowOnEveryIsa) {
  testing::IsaGuard guard;
  const int64_t bt = 5, n_blocks = 16;
  const std::vector<int32_t> blocks = {9, 3, 14, 0, 7, 12, 1, 5, 15, 2, 10, 6, 13, 4, 11, 8};
  for (DType dtype : {DType::kF32, DType::kF16}) {
    for (int64_t hd : {8, 16, 64, 128, 256}) {
      const int64_t kv_dim = 2 * hd, stride = 2 * bt * kv_dim;  // two KV heads; block: keys, then values
      const KvArena arena(random_floats(n_blocks * stride, uint32_t(300 + hd), 1.f), dtype);
      PagedKv kv = arena.paged(hd, bt * kv_dim + hd);  // KV head 1
      kv.blocks = blocks.data();
      kv.block_stride = stride;
      kv.block_tokens = bt;
      kv.pos_stride = kv_dim;
      const float scale = 1.0f / std::sqrt(float(hd));
      for (int64_t n_q : {1, 7, 16, 17, 40}) {
        for (int64_t first_pos : {int64_t{0}, int64_t{3}, int64_t{29}}) {
          if (first_pos + n_q > n_blocks * bt) continue;
          const int64_t q_stride = 3 * hd;  // rows interleaved with other heads, as in the engine
          const std::vector<float> q = random_floats(n_q * q_stride, uint32_t(n_q + first_pos), 3.f);
          for (const float* slope : {static_cast<const float*>(nullptr), &kAlibiSlope}) {
            std::vector<float> want(static_cast<size_t>(n_q * q_stride), -1.f);
            for (int64_t i = 0; i < n_q; ++i) {
              attend_scalar(q.data() + i * q_stride, 1, hd, kv, first_pos + i + 1, scale, slope,
                            want.data() + i * q_stride);
            }
            for (Isa isa : testing::available_isas()) {
              ASSERT_TRUE(set_isa(isa));
              std::vector<float> out(want.size(), -1.f);
              attend_causal(q.data(), q_stride, n_q, hd, kv, first_pos, scale, slope, out.data(), q_stride);
              for (size_t i = 0; i < out.size(); ++i) {
                ASSERT_NEAR(out[i], want[i], 2e-5) << isa_name(isa) << " " << dtype_name(dtype) << " hd " << hd
                                                   << " n_q " << n_q << " first_pos " << first_pos << " alibi "
                                                   << (slope != nullptr) << " i " << i;
              }
            }
          }
        }
      }
    }
  }
}

// f32_to_f16_row on every ISA path is bit-identical to f32_to_f16 for finite
// values, halves' subnormals, ties and overflow; NaN stays NaN.
TEST(Ops, F32ToF16RowMatchesScalarOnEveryIsa) {
  testing::IsaGuard guard;
  std::vector<float> x = random_floats(1000, 77u, 70000.f);
  for (float special : {0.f, -0.f, 65504.f, 65519.f, 65520.f, -1e9f, 6.1e-5f, 5.96e-8f, 2.98e-8f, 1e-30f,
                        1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, std::numeric_limits<float>::infinity()}) {
    x.push_back(special);
    x.push_back(-special);
  }
  for (size_t i = 0; i < 200; ++i) x.push_back(x[i] * 1e-6f);  // subnormal halves
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  for (Isa isa : testing::available_isas()) {
    ASSERT_TRUE(set_isa(isa));
    for (int64_t n : {int64_t(x.size()), int64_t{15}, int64_t{1}}) {
      std::vector<uint16_t> h(size_t(n) + 1, 0xBEEF);
      f32_to_f16_row(x.data() + x.size() - size_t(n), h.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const float v = x[x.size() - size_t(n) + size_t(i)];
        if (std::isnan(v)) {
          EXPECT_TRUE(std::isnan(f16_to_f32(h[size_t(i)]))) << isa_name(isa);
        } else {
          ASSERT_EQ(h[size_t(i)], f32_to_f16(v)) << isa_name(isa) << " x " << v;
        }
      }
      EXPECT_EQ(h[size_t(n)], 0xBEEF) << isa_name(isa) << ": wrote past n " << n;
    }
  }
}

}  // namespace
}  // namespace plimsoll::kernels
