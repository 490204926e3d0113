// matmul: ISA selection, activation preparation into a reused per-thread
// scratch, and the tile and panel loops (rows split across the thread pool).
#include <algorithm>
#include <atomic>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/matmul_impl.h"

namespace plimsoll::kernels {
namespace {

// AMX-TILE + AMX-INT8 in CPUID, tile state enabled by the OS (XCR0 bits 17, 18),
// and (Linux) the process's permission to use tile data, asked for here once.
bool amx_usable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return false;  // AMX-TILE, AMX-INT8
    if (__get_cpuid(1, &a, &b, &c, &d) == 0 || (c & (1u << 27)) == 0) return false;  // OSXSAVE
    uint32_t xcr0_lo = 0, xcr0_hi = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & (3u << 17)) != (3u << 17)) return false;  // XTILECFG, XTILEDATA
    constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
    unsigned long permitted = 0;
    if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0) return false;
    return (permitted & (1ul << kXfeatureXtiledata)) != 0;
  }();
  return usable;
#else
  return false;
#endif
}

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
    case Isa::kAmx: return cpu_has(Isa::kAvx512) && amx_usable();
  }
  return false;
}

Isa best_isa() {
  if (const char* env = std::getenv("PLIMSOLL_ISA")) {
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx}) {
      if (std::strcmp(env, isa_name(isa)) == 0 && cpu_has(isa)) return isa;
    }
  }
  if (cpu_has(Isa::kAmx)) return Isa::kAmx;
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
    case Isa::kAvx512:
    case Isa::kAmx: return avx512_row_kernels();
    case Isa::kAvx2: return avx2_row_kernels();
    case Isa::kScalar: break;
  }
  return scalar_row_kernels();
}

const TileKernel* tile_kernel_for(Isa isa, DType dtype) {
  if (isa != Isa::kAvx512 && isa != Isa::kAmx) return nullptr;
  const TileKernel& k = avx512_tile_kernels().k[static_cast<int>(dtype)];
  return k.tile != nullptr ? &k : nullptr;
}

// AMX where it takes the dtype, batch and row length, else the AVX-512 broadcast kernels
// (float weights), else none (the tiles or the row kernels).
namespace {
bool takes(const PanelKernel& k, int64_t n_tokens, int64_t cols) {
  if (k.rows == nullptr) return false;
  return n_tokens >= k.min_tokens || (k.wide_min_tokens > 0 && cols >= k.wide_cols && n_tokens >= k.wide_min_tokens);
}
}  // namespace

const PanelKernel* panel_kernel_for(Isa isa, DType dtype, int64_t n_tokens, int64_t cols) {
  if (isa != Isa::kAvx512 && isa != Isa::kAmx) return nullptr;
  const int d = static_cast<int>(dtype);
  if (isa == Isa::kAmx) {
    const PanelKernel* k = &amx_kernels().k[d];
    if (k->rows == nullptr && amx_bf16_usable()) k = &amx_bf16_kernels().k[d];
    if (takes(*k, n_tokens, cols)) return k;
  }
  const PanelKernel* k = &avx512_panel_kernels().k[d];
  return takes(*k, n_tokens, cols) ? k : nullptr;
}

// A per-thread buffer of at least `bytes`, 64-byte aligned; it only grows.
std::byte* thread_scratch(size_t bytes) {
  thread_local std::vector<std::byte> scratch;
  if (scratch.size() < bytes + 64) scratch.resize(bytes + 64);
  const auto addr = reinterpret_cast<uintptr_t>(scratch.data());
  return scratch.data() + ((64 - addr % 64) % 64);
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

// Prepared activation rows for a tile kernel: x itself (f32 kernels) or the
// kernel's layout in the caller's scratch; big batches are prepared in parallel.
const std::byte* prepare_tile_acts(const TileKernel& k, const float* x, int64_t n_tokens, int64_t cols,
                                   ThreadPool* pool, int64_t* stride_bytes) {
  if (k.prepare == nullptr) {
    *stride_bytes = cols * static_cast<int64_t>(sizeof(float));
    return reinterpret_cast<const std::byte*>(x);
  }
  *stride_bytes = k.act_row_bytes(cols);
  std::byte* dst = thread_scratch(static_cast<size_t>(*stride_bytes * n_tokens));
  auto run = [&](int64_t t0, int64_t t1) { k.prepare(x, cols, t0, t1, dst); };
  if (pool != nullptr && pool->n_threads() > 1 && n_tokens >= 16) {
    pool->parallel_for(n_tokens, 4, run);
  } else {
    run(0, n_tokens);
  }
  return dst;
}

// Each thread takes a contiguous range of rows; within it, tokens go in panels
// of kTokenPanel (their prepared rows stay in L2) and each kRowTile-row block
// (in L1) meets the panel's tokens kTokenTile at a time.
void matmul_tiled(const TileKernel& k, const TensorView& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool* pool) {
  const int64_t rows = w.rows(), cols = w.cols(), w_row_bytes = w.row_bytes();
  int64_t stride_bytes = 0;
  const std::byte* acts = prepare_tile_acts(k, x, n_tokens, cols, pool, &stride_bytes);
  auto run_rows = [&](int64_t r_begin, int64_t r_end) {
    for (int64_t p0 = 0; p0 < n_tokens; p0 += kTokenPanel) {
      const int64_t p1 = std::min(n_tokens, p0 + kTokenPanel);
      for (int64_t r = r_begin; r < r_end; r += kRowTile) {
        const int n_rows = static_cast<int>(std::min<int64_t>(kRowTile, r_end - r));
        for (int64_t t = p0; t < p1; t += kTokenTile) {
          const int n_tok = static_cast<int>(std::min<int64_t>(kTokenTile, p1 - t));
          k.tile(w.data + r * w_row_bytes, w_row_bytes, n_rows, acts + t * stride_bytes, stride_bytes, n_tok,
                 cols, y + t * rows + r, rows);  // y: [n_tokens, rows]
        }
      }
    }
  };
  if (pool != nullptr && pool->n_threads() > 1 && rows >= 2 * kRowTile) {
    pool->parallel_for(rows, kRowTile, run_rows);
  } else {
    run_rows(0, rows);
  }
}

// Panel kernels (AMX, AVX-512 broadcast): the caller's scratch holds the prepared
// token tiles (prepared in parallel); each thread runs its rows, in kPanelRows
// panels, over all of them.
void matmul_panels(const PanelKernel& k, const TensorView& w, const float* x, int64_t n_tokens, float* y,
                ThreadPool* pool) {
  const int64_t rows = w.rows(), cols = w.cols(), w_row_bytes = w.row_bytes();
  const int64_t n_tiles = (n_tokens + kPanelTokens - 1) / kPanelTokens;
  std::byte* acts = thread_scratch(static_cast<size_t>(k.act_bytes(n_tokens, cols)));
  const bool threaded = pool != nullptr && pool->n_threads() > 1;
  auto prepare = [&](int64_t tt0, int64_t tt1) { k.prepare(x, n_tokens, cols, tt0, tt1, acts); };
  if (threaded && n_tiles >= 2) {
    pool->parallel_for(n_tiles, 1, prepare);
  } else {
    prepare(0, n_tiles);
  }
  auto run_rows = [&](int64_t r0, int64_t r1) {
    k.rows(w.data + r0 * w_row_bytes, w_row_bytes, r1 - r0, acts, n_tokens, cols, y + r0, rows);
  };
  if (threaded && rows >= 2 * kPanelRows) {
    pool->parallel_for(rows, kPanelRows, run_rows);
  } else {
    run_rows(0, rows);
  }
}

}  // namespace

// The scratch as the kernels above keep it: the row path's Q8_0/Q8_K rows (<= 292 B
// per 256 elements, prepare_acts), plus the largest of the AVX-512 tile path's prepared
// rows (192 B per 64 elements), AMX-INT8's token tiles (36 B per 32 elements, tokens
// padded to kPanelTokens) and AMX-BF16's (hi and lo bf16: 4 B per element, columns
// padded to 32) (thread_scratch); plus each thread's weight panel (panel_scratch):
// INT8's 576 B per 32 columns, the K-quants' 12672 B per 256 (Q6_K's three pieces,
// tiles_amx_kquants.cpp) or BF16's panel group (tiles_amx_bf16.cpp: 4-16 panels of
// 2 KiB per 32 columns, 1 MiB unless 4 panels are more). K-quant AMX token tiles:
// 4416 B per 256 elements x 16 tokens, within INT8's 36 B per 32. The AVX-512 broadcast
// kernels for float weights (x86/panels_avx512.cpp) fit AMX-BF16's figures: a token tile
// (16 tokens of f32) is 64 B per column, columns padded to 16; a 16-row f32 panel 64 B
// per column. Each buffer's 64-byte alignment slack is within the 128 B per thread.
int64_t matmul_scratch_bytes(int64_t cols, int64_t t, int64_t n_threads) {
  const int64_t chunks = (cols + 31) / 32, token_tiles = (t + kPanelTokens - 1) / kPanelTokens;
  const int64_t row_path = t * (cols / 256 + 1) * 292;
  const int64_t tile_path = t * (cols / 64 + 1) * 192;
  const int64_t amx_int8 = token_tiles * kPanelTokens * (cols / 32) * 36;
  const int64_t amx_bf16 = token_tiles * chunks * 2048;
  const int64_t panel = std::max({(cols / 32) * 576, (cols / 256 + 1) * 12672, int64_t{1} << 20, 4 * chunks * 2048});
  return row_path + std::max({tile_path, amx_int8, amx_bf16}) + n_threads * (panel + 128) + 4096;
}

// AMX-BF16 (TDPBF16PS) and AVX512-BF16 (the float kernels' conversions) on top of AMX-INT8's checks.
bool amx_bf16_usable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!amx_usable() || __get_cpuid_count(7, 0, &a, &b, &c, &d) == 0 || (d & (1u << 22)) == 0) return false;
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) != 0 && (a & (1u << 5)) != 0;
  }();
  return usable;
#else
  return false;
#endif
}

Isa active_isa() { return current_isa().load(std::memory_order_relaxed); }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
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
  if (const PanelKernel* k = panel_kernel_for(active_isa(), w.dtype, n_tokens, cols)) {
    matmul_panels(*k, w, x, n_tokens, y, pool);
    return;
  }
  if (const TileKernel* k = tile_kernel_for(active_isa(), w.dtype)) {
    matmul_tiled(*k, w, x, n_tokens, y, pool);
    return;
  }
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
