// machine_peaks: the machine's memory read bandwidth and f32 FMA peak, for
// context next to the engine's figures (bench/engine_matrix.sh prints them).
// Bandwidth: each thread sums its share of a 1 GiB buffer (AVX-512 when the
// CPU has it); FMA: independent FMA chains in registers.
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

__attribute__((target("avx512f"))) float sum_avx512(const float* p, size_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx512f"))) float fma_avx512(long iters) {
  __m512 acc[8];
  for (auto& a : acc) a = _mm512_set1_ps(1.0f);
  const __m512 m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm512_fmadd_ps(a, m, b);
  }
  __m512 s = acc[0];
  for (int k = 1; k < 8; ++k) s = _mm512_add_ps(s, acc[k]);
  return _mm512_reduce_add_ps(s);
}

template <typename F>
double run_threads(int n, F f) {
  std::vector<std::thread> ts;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) ts.emplace_back(f, i);
  for (auto& t : ts) t.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : static_cast<int>(std::thread::hardware_concurrency());
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("machine_peaks: needs AVX-512F\n");
    return 0;
  }
  const size_t n = (size_t{1} << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  std::vector<float> sink(static_cast<size_t>(threads));
  double best_bw = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double s = run_threads(threads, [&](int t) {
      const size_t per = n / static_cast<size_t>(threads);
      sink[static_cast<size_t>(t)] = sum_avx512(buf.data() + per * static_cast<size_t>(t), per);
    });
    best_bw = std::max(best_bw, static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  const long iters = 100'000'000;
  double best_flops = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double s = run_threads(threads, [&](int t) { sink[static_cast<size_t>(t)] = fma_avx512(iters); });
    best_flops = std::max(best_flops, 2.0 * 16 * 8 * static_cast<double>(iters) * threads / s / 1e9);
  }
  std::printf("threads %d: memory read bandwidth %.1f GB/s, f32 FMA peak %.0f GFLOP/s (best of runs; sink %g)\n",
              threads, best_bw, best_flops, static_cast<double>(sink[0]));
  return 0;
}
