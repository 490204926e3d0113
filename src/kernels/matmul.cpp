// matmul: ISA selection, activation quantization into a reused per-thread
// scratch, and the row x token-tile loop split across the thread pool.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

bool cpu_has(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2:
#if defined(__x86_64__) || defined(__i386__)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__) || defined(__i386__)
      return cpu_has(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
#else
      return false;
#endif
  }
  return false;
}

Isa best_isa() {
  if (cpu_has(Isa::kAvx512)) return Isa::kAvx512;
  if (cpu_has(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

std::atomic<Isa>& current_isa() {
  static std::atomic<Isa> isa{best_isa()};
  return isa;
}

const RowKernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return avx512_row_kernels();
    case Isa::kAvx2: return avx2_row_kernels();
    case Isa::kScalar: break;
  }
  return scalar_row_kernels();
}

// Activation rows in the weight dtype's act format. The buffer belongs to the
// calling thread and only grows, so steady-state calls do not allocate; pool
// workers read it while the caller waits in parallel_for.
const std::byte* prepare_acts(DType w_dtype, const float* x, int64_t n_tokens, int64_t cols,
                              int64_t* stride_bytes) {
  const DType a = act_dtype(w_dtype);
  if (a == DType::kF32) {
    *stride_bytes = cols * static_cast<int64_t>(sizeof(float));
    return reinterpret_cast<const std::byte*>(x);
  }
  thread_local std::vector<std::byte> scratch;
  *stride_bytes = dtype_row_bytes(a, cols);
  const size_t need = static_cast<size_t>(*stride_bytes * n_tokens);
  if (scratch.size() < need) scratch.resize(need);
  for (int64_t t = 0; t < n_tokens; ++t) {
    quantize_row(a, x + t * cols, scratch.data() + t * *stride_bytes, cols);
  }
  return scratch.data();
}

}  // namespace

Isa active_isa() { return current_isa().load(std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "unknown";
}

bool set_isa(Isa isa) {
  if (!cpu_has(isa)) return false;
  current_isa().store(isa, std::memory_order_relaxed);
  return true;
}

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  const int64_t rows = w.rows(), cols = w.cols();
  assert(cols % dtype_traits(w.dtype).block_elems == 0);
  if (rows == 0 || n_tokens <= 0) return;
  int64_t stride_bytes = 0;
  const std::byte* acts = prepare_acts(w.dtype, x, n_tokens, cols, &stride_bytes);
  const RowTileFn fn = kernels_for(active_isa()).fn[static_cast<int>(w.dtype)];
  const int64_t w_row_bytes = w.row_bytes();
  auto run_rows = [&](int64_t begin, int64_t end) {
    float out[kTokenTile];
    for (int64_t r = begin; r < end; ++r) {
      const std::byte* w_row = w.data + r * w_row_bytes;
      for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenTile) {
        const int n_tok = static_cast<int>(std::min<int64_t>(kTokenTile, n_tokens - t0));
        fn(w_row, acts + t0 * stride_bytes, stride_bytes, n_tok, cols, out);
        for (int t = 0; t < n_tok; ++t) y[(t0 + t) * rows + r] = out[t];  // y: [n_tokens, rows]
      }
    }
  };
  if (pool != nullptr && pool->n_threads() > 1 && rows >= 32) {
    pool->parallel_for(rows, 16, run_rows);
  } else {
    run_rows(0, rows);
  }
}

}  // namespace plimsoll::kernels
