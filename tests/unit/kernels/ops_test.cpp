// The f32 element-wise ops against straightforward double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>

#include "kernel_test_util.h"

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

// rope keeps the last position's cos/sin per thread: a call's result must not
// depend on the calls before it (other positions, head sizes, thetas).
TEST(Ops, RopeDoesNotDependOnEarlierCalls) {
  const std::vector<float> x = random_floats(64, 8);
  std::vector<float> first = x, again = x, other = x;
  rope(first.data(), 64, 37, 10000.f, false);
  rope(other.data(), 32, 37, 10000.f, false);  // same position, another head size
  rope(other.data(), 64, 37, 500000.f, true);  // another theta
  rope(other.data(), 64, 38, 10000.f, false);  // another position
  rope(again.data(), 64, 37, 10000.f, false);
  EXPECT_EQ(first, again);
  std::vector<float> repeat = x;
  rope(repeat.data(), 64, 37, 10000.f, false);
  rope(repeat.data(), 64, 37, 10000.f, false);  // the cached table, applied twice = angle doubled
  std::vector<float> doubled = x;
  rope(doubled.data(), 64, 74, 10000.f, false);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(repeat[i], doubled[i], 1e-4) << i;
}

TEST(Ops, SwiGlu) {
  const std::vector<float> g = random_floats(40, 6, 4.f), u = random_floats(40, 7);
  std::vector<float> out(40);
  swiglu(out.data(), g.data(), u.data(), 40);
  for (size_t i = 0; i < 40; ++i) {
    const double silu = g[i] / (1.0 + std::exp(-double(g[i])));
    EXPECT_NEAR(out[i], silu * u[i], 1e-5 * (1 + std::fabs(silu * u[i]))) << i;
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

}  // namespace
}  // namespace plimsoll::kernels
