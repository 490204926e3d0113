// machine_peaks: the machine's memory read bandwidth and f32 FMA peak, for
// context next to the engine's figures (bench/engine_matrix.sh prints them).
// Bandwidth: each thread sums its share of a 1 GiB buffer (AVX-512 when the
// CPU has it and PLIMSOLL_ISA does not say avx2, else AVX2); FMA: independent
// FMA chains in registers. Int8: on AVX2, vpmaddubsw + vpmaddwd chains (what
// the AVX2 kernels run); with AVX-VNNI, 256-bit vpdpbusd chains (the avx2-vnni
// level's); when the CPU has them, AVX-512 VNNI vpdpbusd chains, and AMX
// TDPBSSD into 4 result tiles with
// full 64-byte K and with the 32-byte K (one Q8_0 block) the kernels use, per
// second of thread CPU time.
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

__attribute__((target("avx2,fma"))) float sum_avx2(const float* p, size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  float sum = 0;
  for (float v : lanes) sum += v;
  return sum;
}

__attribute__((target("avx2,fma"))) float fma_avx2(long iters) {
  __m256 acc[10];
  for (auto& a : acc) a = _mm256_set1_ps(1.0f);
  const __m256 m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm256_fmadd_ps(a, m, b);
  }
  __m256 s = acc[0];
  for (int k = 1; k < 10; ++k) s = _mm256_add_ps(s, acc[k]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  return lanes[0];
}

// vpmaddubsw (32 u8 x s8 products in pairs) + vpmaddwd (pairs to int32) + add: 32 MACs,
// kChains independent chains in named registers (an array of them stayed on the stack,
// and the store-to-load round trip each step, not the multiplies, set the rate: 55 against
// ~110 GMAC/s on a Zen 4); the empty asm makes each step's u opaque, so the products are
// recomputed every time (not hoisted out of the loop).
constexpr int kChains = 4;  // 4 sums + 4 inputs + 2 constants + temporaries fit the 16 registers
__attribute__((target("avx2"))) int maddubs_avx2(long iters) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  __m256i u0 = _mm256_set1_epi8(3), u1 = _mm256_set1_epi8(4), u2 = _mm256_set1_epi8(5), u3 = _mm256_set1_epi8(6);
  const __m256i v = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
// the sum added in place (GCC would add into a fresh register and move it back)
#define PLIMSOLL_STEP(a, u) \
  asm("vpaddd %1, %0, %0" : "+x"(a) : "x"(_mm256_madd_epi16(_mm256_maddubs_epi16(u, v), ones)))
  for (long i = 0; i < iters; ++i) {
    asm volatile("" : "+x"(u0), "+x"(u1), "+x"(u2), "+x"(u3));
    PLIMSOLL_STEP(a0, u0);
    PLIMSOLL_STEP(a1, u1);
    PLIMSOLL_STEP(a2, u2);
    PLIMSOLL_STEP(a3, u3);
  }
#undef PLIMSOLL_STEP
  return _mm256_extract_epi32(_mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3)), 0);
}

__attribute__((target("avx512f,avx512vnni"))) int vnni_avx512(long iters) {
  __m512i acc[8];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i u = _mm512_set1_epi8(3), v = _mm512_set1_epi8(-2);
  for (long i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm512_dpbusd_epi32(a, u, v);
  }
  __m512i s = acc[0];
  for (int k = 1; k < 8; ++k) s = _mm512_add_epi32(s, acc[k]);
  return _mm512_reduce_add_epi32(s);
}

__attribute__((target("avx2,avxvnni"))) int vnni_avx2(long iters) {
  __m256i acc[10];
  for (auto& a : acc) a = _mm256_setzero_si256();
  const __m256i u = _mm256_set1_epi8(3), v = _mm256_set1_epi8(-2);
  for (long i = 0; i < iters; ++i) {
    for (auto& a : acc) a = _mm256_dpbusd_avx_epi32(a, u, v);
  }
  __m256i s = acc[0];
  for (int k = 1; k < 10; ++k) s = _mm256_add_epi32(s, acc[k]);
  return _mm256_extract_epi32(s, 0);
}

// AVX-VNNI: CPUID leaf 7 subleaf 1, EAX bit 4 (as the kernels' dispatch checks it).
bool avx_vnni() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 4)) != 0;
}

bool amx_int8_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (d & (3u << 24)) != (3u << 24)) return false;
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
}

struct alignas(64) TileConfig {
  uint8_t palette_id = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// 4 independent 16x16 int32 tiles += A (16 x k_bytes) . B (k_bytes/4 x 64); returns one element.
__attribute__((target("amx-tile,amx-int8"))) int amx_int8(long iters, int k_bytes) {
  TileConfig cfg;
  for (int t = 0; t < 4; ++t) { cfg.rows[t] = 16; cfg.colsb[t] = 64; }
  cfg.rows[4] = 16; cfg.colsb[4] = static_cast<uint16_t>(k_bytes);
  cfg.rows[5] = static_cast<uint8_t>(k_bytes / 4); cfg.colsb[5] = 64;
  alignas(64) static thread_local int8_t buf[16 * 64];
  alignas(64) int32_t out[16 * 16];
  std::memset(buf, 1, sizeof buf);
  _tile_loadconfig(&cfg);
  _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
  _tile_loadd(4, buf, 64);
  _tile_loadd(5, buf, 64);
  for (long i = 0; i < iters; ++i) {
    _tile_dpbssd(0, 4, 5); _tile_dpbssd(1, 4, 5); _tile_dpbssd(2, 4, 5); _tile_dpbssd(3, 4, 5);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
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
  const char* isa_env = std::getenv("PLIMSOLL_ISA");
  const bool forced_avx2 = isa_env != nullptr && std::strncmp(isa_env, "avx2", 4) == 0;  // avx2, avx2-vnni
  const bool avx512 = __builtin_cpu_supports("avx512f") && !forced_avx2;
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    std::printf("machine_peaks: needs AVX2 + FMA or AVX-512F\n");
    return 0;
  }
  const char* isa = avx512 ? "avx512" : "avx2";
  const size_t n = (size_t{1} << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  std::vector<float> sink(static_cast<size_t>(threads));
  double best_bw = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double s = run_threads(threads, [&](int t) {
      const size_t per = n / static_cast<size_t>(threads);
      const float* part = buf.data() + per * static_cast<size_t>(t);
      sink[static_cast<size_t>(t)] = avx512 ? sum_avx512(part, per) : sum_avx2(part, per);
    });
    best_bw = std::max(best_bw, static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  const long iters = 100'000'000;
  double best_flops = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const double s = run_threads(threads, [&](int t) {
      sink[static_cast<size_t>(t)] = avx512 ? fma_avx512(iters) : fma_avx2(iters);
    });
    const double flops_per_iter = avx512 ? 2.0 * 16 * 8 : 2.0 * 8 * 10;
    best_flops = std::max(best_flops, flops_per_iter * static_cast<double>(iters) * threads / s / 1e9);
  }
  std::printf("threads %d (%s): memory read bandwidth %.1f GB/s, f32 FMA peak %.0f GFLOP/s (best of runs; sink %g)\n",
              threads, isa, best_bw, best_flops, static_cast<double>(sink[0]));
  // Int8 rates per second of each thread's CPU time (robust to a shared machine), summed over threads.
  std::vector<int> isink(static_cast<size_t>(threads));
  std::vector<double> cpu_s(static_cast<size_t>(threads));
  auto best_rate = [&](long n_iters, double macs_per_iter, auto body) {
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
      run_threads(threads, [&](int t) {
        timespec t0{}, t1{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        isink[static_cast<size_t>(t)] = body(n_iters);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        cpu_s[static_cast<size_t>(t)] = static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
      });
      double rate = 0;
      for (double s : cpu_s) rate += macs_per_iter * static_cast<double>(n_iters) / s / 1e9;
      best = std::max(best, rate);
    }
    return best;
  };
  const double madd = best_rate(50'000'000, 32.0 * kChains, [](long it) { return maddubs_avx2(it); });
  std::printf("threads %d: int8 AVX2 (vpmaddubsw + vpmaddwd) peak %.0f GMAC/s\n", threads, madd);
  if (avx_vnni()) {
    const double vnni = best_rate(50'000'000, 32.0 * 10, [](long it) { return vnni_avx2(it); });
    std::printf("threads %d: int8 AVX-VNNI (256-bit vpdpbusd) peak %.0f GMAC/s\n", threads, vnni);
  }
  if (avx512 && __builtin_cpu_supports("avx512vnni")) {
    const double vnni = best_rate(50'000'000, 64.0 * 8, [](long it) { return vnni_avx512(it); });
    std::printf("threads %d: int8 VNNI (vpdpbusd) peak %.0f GMAC/s\n", threads, vnni);
  }
  if (avx512 && amx_int8_usable()) {
    const double k64 = best_rate(5'000'000, 4 * 16 * 16 * 64.0, [](long it) { return amx_int8(it, 64); });
    const double k32 = best_rate(5'000'000, 4 * 16 * 16 * 32.0, [](long it) { return amx_int8(it, 32); });
    std::printf("threads %d: int8 AMX (tdpbssd) peak %.0f GMAC/s at K=64, %.0f GMAC/s at K=32 (one Q8_0 block)\n",
                threads, k64, k32);
  }
  return 0;
}
