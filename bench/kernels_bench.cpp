// Kernel micro-benchmark (Google Benchmark): matmul at the 134M model's shapes for
// decode (1..4 tokens) and batched/prefill token counts, a decode step's matmuls
// streamed from memory, decode and causal attention over a paged KV cache, and the
// FFN's swiglu. Built by bench/kernels_bench.sh.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/kernels.h"

namespace plimsoll::kernels {
namespace {

struct Matrix {
  std::vector<std::byte> bytes;
  TensorView view;
};

// A [rows, cols] matrix of dtype from N(0, 0.5) floats (quantized once, cached).
const Matrix& matrix(DType dtype, int64_t rows, int64_t cols) {
  static std::vector<std::pair<std::vector<int64_t>, std::unique_ptr<Matrix>>> cache;
  const std::vector<int64_t> key = {static_cast<int64_t>(dtype), rows, cols};
  for (auto& [k, m] : cache) if (k == key) return *m;
  auto m = std::make_unique<Matrix>();
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.f, 0.5f);
  std::vector<float> row(static_cast<size_t>(cols));
  const int64_t row_bytes = dtype_row_bytes(dtype, cols);
  m->bytes.resize(static_cast<size_t>(rows * row_bytes));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = dist(rng);
    quantize_row(dtype, row.data(), m->bytes.data() + r * row_bytes, cols);
  }
  m->view.dtype = dtype;
  m->view.shape = {rows, cols};
  m->view.data = m->bytes.data();
  m->view.n_bytes = static_cast<int64_t>(m->bytes.size());
  cache.emplace_back(key, std::move(m));
  return *cache.back().second;
}

// args: dtype, rows, cols, n_tokens, threads, isa (Isa as int: 2 avx512, 3 amx)
void BM_Matmul(benchmark::State& state) {
  const auto dtype = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n_tokens = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  if (!set_isa(static_cast<Isa>(state.range(5)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  const Matrix& w = matrix(dtype, rows, cols);
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(n_tokens * cols)), y(static_cast<size_t>(n_tokens * rows));
  for (float& f : x) f = dist(rng);
  ThreadPool pool(threads);
  for (auto _ : state) {
    matmul(w.view, x.data(), n_tokens, y.data(), threads > 1 ? &pool : nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["w_GB/s"] = benchmark::Counter(iters * static_cast<double>(w.bytes.size()) * 1e-9,
                                                benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(iters * static_cast<double>(rows * cols * n_tokens) * 1e-9,
                                                benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + isa_name(active_isa()));
}

void Shapes(benchmark::internal::Benchmark* b) {
  const DType dtypes[] = {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kF16, DType::kF32};
  const int64_t shapes[][2] = {{64, 256}, {768, 768}, {2048, 768}, {768, 2048}, {32000, 768},  // 134M
                               {2048, 2048}, {5632, 2048}, {2048, 5632}};               // 1.1B
  for (DType d : dtypes) {
    for (const auto& s : shapes) {
      for (int64_t n : {1, 2, 3, 4, 8, 12, 16, 32, 64, 512}) {
        if (s[0] == 32000 && n > 16) continue;  // the head sees one token per sequence
        if (s[0] * s[1] > 4'000'000 && s[0] != 32000 && n != 16 && n != 512) continue;  // 1.1B: 16, 512
        for (Isa isa : {Isa::kAvx2, Isa::kAvx2Vnni, Isa::kAvx512, Isa::kAmx}) {  // avx2-vnni: isa 6
          if (isa == Isa::kAmx && n < 8) continue;  // AMX: batches only
          b->Args({static_cast<int64_t>(d), s[0], s[1], n, 1, static_cast<int64_t>(isa)});
          if (n == 512) b->Args({static_cast<int64_t>(d), s[0], s[1], n, 2, static_cast<int64_t>(isa)});  // scaling
        }
      }
    }
  }
}

BENCHMARK(BM_Matmul)->Apply(Shapes)->ArgNames({"dtype", "rows", "cols", "tokens", "threads", "isa"})
    ->Unit(benchmark::kMicrosecond);

// Decode's matmuls as a decode step streams them: `tokens` tokens (a batch of that many
// sequences) through the 134M model's layers (Q, K, V, O 768 x 768, gate and up 2048 x
// 768, down 768 x 2048; 12 layers) and its 32000-row head, each matrix its own memory
// (F16 220 MB, Q4_0 62 MB: not in any cache), so w_GB/s is the memory stream the kernels
// reach (one token: the gemv). args: dtype, tokens, threads, isa
void BM_DecodeStream(benchmark::State& state) {
  const auto dtype = static_cast<DType>(state.range(0));
  const int64_t n_tokens = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  if (!set_isa(static_cast<Isa>(state.range(3)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  constexpr int64_t kLayers = 12, kDim = 768, kFfn = 2048, kVocab = 32000;
  struct Shape { int64_t rows, cols; };
  std::vector<Shape> shapes;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (Shape s : {Shape{kDim, kDim}, Shape{kDim, kDim}, Shape{kDim, kDim}, Shape{kDim, kDim}, Shape{kFfn, kDim},
                    Shape{kFfn, kDim}, Shape{kDim, kFfn}}) {
      shapes.push_back(s);
    }
  }
  shapes.push_back({kVocab, kDim});
  // one random row pattern per shape, copied into every matrix (quantizing 220 MB row by row is slow)
  std::vector<std::vector<std::byte>> mats;
  std::vector<TensorView> views;
  int64_t total_bytes = 0;
  for (const Shape& s : shapes) {
    const Matrix& proto = matrix(dtype, std::min<int64_t>(s.rows, 64), s.cols);
    const int64_t row_bytes = dtype_row_bytes(dtype, s.cols);
    std::vector<std::byte>& m = mats.emplace_back(static_cast<size_t>(s.rows * row_bytes));
    for (int64_t r = 0; r < s.rows; ++r) {
      std::copy_n(proto.bytes.data() + (r % 64) * row_bytes, row_bytes, m.data() + r * row_bytes);
    }
    total_bytes += s.rows * row_bytes;
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    TensorView v;
    v.dtype = dtype;
    v.shape = {shapes[i].rows, shapes[i].cols};
    v.data = mats[i].data();
    v.n_bytes = static_cast<int64_t>(mats[i].size());
    views.push_back(v);
  }
  std::mt19937 rng(8);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(static_cast<size_t>(kFfn * n_tokens)), y(static_cast<size_t>(kVocab * n_tokens));
  for (float& f : x) f = dist(rng);
  ThreadPool pool(threads);
  for (auto _ : state) {
    for (const TensorView& v : views) matmul(v, x.data(), n_tokens, y.data(), threads > 1 ? &pool : nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["w_GB/s"] = benchmark::Counter(static_cast<double>(state.iterations()) *
                                                static_cast<double>(total_bytes) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + isa_name(active_isa()));
}

BENCHMARK(BM_DecodeStream)
    ->ArgsProduct({{static_cast<int64_t>(DType::kF16), static_cast<int64_t>(DType::kQ8_0),
                    static_cast<int64_t>(DType::kQ4_0), static_cast<int64_t>(DType::kQ4_K)},
                   {1, 2, 3, 4, 8, 16}, {1, 2}, {static_cast<int64_t>(Isa::kAvx512), static_cast<int64_t>(Isa::kAvx2)}})
    ->ArgNames({"dtype", "tokens", "threads", "isa"})->Unit(benchmark::kMillisecond);

// Decode attention: `group` query heads sharing one KV head over n_pos cached
// positions in 16-token blocks (shuffled, as a busy pool hands them out).
// args: group, head_dim, n_pos, kv dtype (DType as int), isa
// A paged KV head of n_pos random positions in 16-position blocks (quantized to dtype);
// the block order shuffled when shuffle is set.
struct BenchKv {
  std::vector<std::byte> keys, values;
  std::vector<int32_t> blocks;
  PagedKv kv;
  BenchKv(int64_t n_pos, int64_t hd, DType dtype, std::mt19937& rng, bool shuffle) {
    constexpr int64_t kBlockTokens = 16;
    const int64_t n_blocks = (n_pos + kBlockTokens - 1) / kBlockTokens;
    const int64_t elem_bytes = dtype == DType::kF16 ? 2 : 4;
    std::normal_distribution<float> dist(0.f, 1.f);
    keys.resize(static_cast<size_t>(n_blocks * kBlockTokens * hd * elem_bytes));
    values.resize(keys.size());
    std::vector<float> row(static_cast<size_t>(hd));
    for (auto* arena : {&keys, &values}) {
      for (int64_t r = 0; r < n_blocks * kBlockTokens; ++r) {
        for (float& f : row) f = dist(rng);
        quantize_row(dtype, row.data(), arena->data() + r * hd * elem_bytes, hd);
      }
    }
    blocks.resize(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) blocks[static_cast<size_t>(b)] = static_cast<int32_t>(b);
    if (shuffle) std::shuffle(blocks.begin(), blocks.end(), rng);
    kv.keys = keys.data();
    kv.values = values.data();
    kv.dtype = dtype;
    kv.blocks = blocks.data();
    kv.block_stride = kBlockTokens * hd;
    kv.block_tokens = kBlockTokens;
    kv.pos_stride = hd;
  }
};

void BM_Attend(benchmark::State& state) {
  const int64_t group = state.range(0), hd = state.range(1), n_pos = state.range(2);
  const auto dtype = static_cast<DType>(state.range(3));
  if (!set_isa(static_cast<Isa>(state.range(4)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  const int64_t elem_bytes = dtype == DType::kF16 ? 2 : 4;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.f, 1.f);
  const BenchKv bench_kv(n_pos, hd, dtype, rng, true);
  const PagedKv& kv = bench_kv.kv;
  std::vector<float> q(static_cast<size_t>(group * hd)), out(q.size());
  for (float& f : q) f = dist(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (auto _ : state) {
    attend(q.data(), group, hd, kv, n_pos, scale, nullptr, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kv_GB/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(n_pos * hd * elem_bytes) * 1e-9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(dtype)) + " " + isa_name(active_isa()));
}

// Decode attention over caches too large for the CPU's caches, laid out as the
// engine's pool is: 16-position blocks of every KV head's rows ([block][pos][head][dim]),
// the blocks of 64 sequences shuffled over the pool; each iteration attends one
// head of one sequence, heads of a sequence in turn (as a decode step does), so
// every row comes from memory; or (head_major 1) one head of every sequence in turn.
// args: n_pos, isa, head_major
void BM_AttendCold(benchmark::State& state) {
  const int64_t n_pos = state.range(0);
  const bool head_major = state.range(2) != 0;
  if (!set_isa(static_cast<Isa>(state.range(1)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  constexpr int64_t kBlockTokens = 16, kHeads = 12, kHd = 64, kSeqs = 64;
  const int64_t blocks_per_seq = (n_pos + kBlockTokens - 1) / kBlockTokens, n_blocks = kSeqs * blocks_per_seq;
  const int64_t block_elems = kBlockTokens * kHeads * kHd;
  std::vector<uint16_t> keys(static_cast<size_t>(n_blocks * block_elems)), values(keys.size());
  std::mt19937 rng(4);
  for (auto* arena : {&keys, &values}) {
    for (uint16_t& h : *arena) h = static_cast<uint16_t>(0x3000 + rng() % 0x1000);  // f16 in [0.125, 1)
  }
  std::vector<int32_t> blocks(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) blocks[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  std::vector<float> q(kHd), out(kHd);
  for (float& f : q) f = static_cast<float>(rng() % 1000) / 1000.0f;
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t seq = head_major ? i % kSeqs : (i / kHeads) % kSeqs;
    const int64_t head = head_major ? (i / kSeqs) % kHeads : i % kHeads;
    ++i;
    PagedKv kv;
    kv.keys = keys.data() + head * kHd;
    kv.values = values.data() + head * kHd;
    kv.dtype = DType::kF16;
    kv.blocks = blocks.data() + seq * blocks_per_seq;
    kv.block_stride = block_elems;
    kv.block_tokens = kBlockTokens;
    kv.pos_stride = kHeads * kHd;
    attend(q.data(), 1, kHd, kv, n_pos, 0.125f, nullptr, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["kv_GB/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(n_pos * kHd * 2) * 1e-9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string("f16 ") + isa_name(active_isa()));
}

BENCHMARK(BM_AttendCold)->ArgsProduct({{128, 512}, {static_cast<int64_t>(Isa::kAvx512), static_cast<int64_t>(Isa::kAvx2)}, {0, 1}})
    ->ArgNames({"n_pos", "isa", "head_major"})->Unit(benchmark::kMicrosecond);

// Causal prefill attention of one head: n_q consecutive queries from position 0 over
// their own f16 keys and values (what a prefill step runs per KV head), MACs of the
// scores and the weighted values counted over the visible positions only.
// args: head_dim, n_q, isa
void BM_AttendCausal(benchmark::State& state) {
  const int64_t hd = state.range(0), n_q = state.range(1);
  if (!set_isa(static_cast<Isa>(state.range(2)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.f, 1.f);
  const BenchKv bench_kv(n_q, hd, DType::kF16, rng, false);
  const PagedKv& kv = bench_kv.kv;
  std::vector<float> q(static_cast<size_t>(n_q * hd)), out(q.size());
  for (float& f : q) f = dist(rng);
  for (auto _ : state) {
    attend_causal(q.data(), hd, n_q, hd, kv, 0, 1.0f / std::sqrt(static_cast<float>(hd)), nullptr, out.data(), hd);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GMAC/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2.0 * static_cast<double>(n_q * (n_q + 1) / 2 * hd) * 1e-9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string("f16 ") + isa_name(active_isa()));
}

BENCHMARK(BM_AttendCausal)->ArgsProduct({{64, 128}, {512}, {static_cast<int64_t>(Isa::kAvx512), static_cast<int64_t>(Isa::kAvx2)}})
    ->ArgNames({"head_dim", "n_q", "isa"})->Unit(benchmark::kMicrosecond);

// The FFN's gate activation over one prefill step (512 tokens x 2048), in place as
// the engine runs it. args: isa
void BM_Swiglu(benchmark::State& state) {
  if (!set_isa(static_cast<Isa>(state.range(0)))) {
    state.SkipWithError("this CPU lacks the ISA");
    return;
  }
  constexpr int64_t kN = 512 * 2048;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.f, 2.f);
  std::vector<float> gate(kN), up(kN), h(kN);
  for (float& f : gate) f = dist(rng);
  for (float& f : up) f = dist(rng);
  for (auto _ : state) {
    std::copy(gate.begin(), gate.end(), h.begin());
    swiglu(h.data(), h.data(), up.data(), kN);
    benchmark::DoNotOptimize(h.data());
  }
  state.counters["Gelem/s"] = benchmark::Counter(static_cast<double>(state.iterations() * kN) * 1e-9,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(isa_name(active_isa()));
}

BENCHMARK(BM_Swiglu)->Arg(static_cast<int64_t>(Isa::kAvx512))->Arg(static_cast<int64_t>(Isa::kAvx2))
    ->ArgNames({"isa"})->Unit(benchmark::kMicrosecond);

void AttendShapes(benchmark::internal::Benchmark* b) {
  for (DType d : {DType::kF16, DType::kF32}) {
    for (int64_t group : {1, 2, 4, 8}) {  // query heads per KV head: 134M 1, 1.1B 8
      for (int64_t n_pos : {128, 512, 2048}) {
        for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
          b->Args({group, 64, n_pos, static_cast<int64_t>(d), static_cast<int64_t>(isa)});
        }
      }
    }
  }
}

BENCHMARK(BM_Attend)->Apply(AttendShapes)->ArgNames({"group", "head_dim", "n_pos", "kv_dtype", "isa"})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace plimsoll::kernels

BENCHMARK_MAIN();
