// matmul: activation preparation into a reused per-thread scratch, and the
// tile and panel loops (rows split across the thread pool), over the active
// ISA's kernel table (isa_table.h).
#include <algorithm>
#include <cassert>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/isa_table.h"
#include "kernels/kernels.h"
#include "kernels/layout_bytes.h"
#include "kernels/matmul_impl.h"
#include "kernels/scratch.h"

namespace plimsoll::kernels {
namespace {

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
  const IsaTable& table = active_table();
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::byte* row = scratch.data() + t * *stride_bytes;
    if (a == DType::kQ8_0) {
      table.quantize_q8_0(x + t * cols, reinterpret_cast<BlockQ8_0*>(row), cols);
    } else {
      table.quantize_q8_k(x + t * cols, reinterpret_cast<BlockQ8K*>(row), cols);
    }
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

// Panel kernels (AMX, AVX-512 broadcast, AVX2): the caller's scratch holds the prepared
// token tiles (prepared in parallel, once for every weight: their kernels prepare alike);
// each thread runs its rows, in kPanelRows panels, over all of them. The weights' rows
// count as one range [0, sum of rows) split across the pool.
struct PanelJob {
  const PanelKernel* k;
  const TensorView* w;
  float* y;
};

void matmul_panels(const PanelJob* jobs, int n_jobs, const float* x, int64_t n_tokens, ThreadPool* pool) {
  const PanelKernel& k0 = *jobs[0].k;
  const int64_t cols = jobs[0].w->cols();
  const int64_t n_tiles = (n_tokens + kPanelTokens - 1) / kPanelTokens;
  std::byte* acts = thread_scratch(static_cast<size_t>(k0.act_bytes(n_tokens, cols)));
  const bool threaded = pool != nullptr && pool->n_threads() > 1;
  auto prepare = [&](int64_t tt0, int64_t tt1) { k0.prepare(x, n_tokens, cols, tt0, tt1, acts); };
  if (threaded && n_tiles >= 2) {
    pool->parallel_for(n_tiles, 1, prepare);
  } else {
    prepare(0, n_tiles);
  }
  int64_t total_rows = 0;
  for (int i = 0; i < n_jobs; ++i) total_rows += jobs[i].w->rows();
  auto run_rows = [&](int64_t r0, int64_t r1) {  // [r0, r1) of the weights' rows in order
    int64_t first = 0;
    for (int i = 0; i < n_jobs && first < r1; ++i) {
      const PanelJob& j = jobs[i];
      const int64_t rows = j.w->rows(), a = std::max(r0, first), b = std::min(r1, first + rows);
      if (a < b) {
        const int64_t w_row_bytes = j.w->row_bytes();
        j.k->rows(j.w->data + (a - first) * w_row_bytes, w_row_bytes, b - a, acts, n_tokens, cols,
                  j.y + (a - first), rows);
      }
      first += rows;
    }
  };
  if (threaded && total_rows >= 2 * kPanelRows) {
    pool->parallel_for(total_rows, kPanelRows, run_rows);
  } else {
    run_rows(0, total_rows);
  }
}

}  // namespace

// The scratch as the kernels above keep it, on any ISA level (layout_bytes.h says why all of
// them, and declares each figure): the row path's Q8_0/Q8_K rows (prepare_acts), plus the
// largest of what a tile or panel kernel prepares (thread_scratch): the AVX-512 tiles' rows,
// AMX-INT8's token tiles (tokens padded to kPanelTokens), AMX-BF16's hi and lo bf16 token
// tiles (columns padded to 32) and the AVX2 panels' groups (the plain build's Q8_0, the
// largest); plus each thread's weight panel (panel_scratch_bytes). The others fit these: the
// AMX K-quant token tiles (4416 B per 256 elements x 16 tokens) within AMX-INT8's; the AVX-512
// broadcast kernels' f32 token tiles (64 B per column, columns padded to 16) within AMX-BF16's;
// the AVX2 float and K-quant panels' and the NEON panels' activations within the AVX2 and
// AMX-BF16 figures. isa_table_test holds every kernel row of this CPU's levels to it. Each
// buffer's 64-byte alignment slack is within the 128 B per thread.
int64_t matmul_scratch_bytes(int64_t cols, int64_t t, int64_t n_threads) {
  const int64_t chunks = (cols + 31) / 32, token_tiles = (t + kPanelTokens - 1) / kPanelTokens;
  const int64_t row_path = t * (cols / kQKK + 1) * kRowActBytesPerBlock256;
  const int64_t tile_path = t * (cols / (2 * kQK) + 1) * kAvx512TileActPairBytes;
  const int64_t amx_int8 = token_tiles * (cols / kQK) * kAmxInt8ActBlockBytes;
  const int64_t amx_bf16 = token_tiles * chunks * kAmxBf16ChunkBytes;
  const int64_t avx2_panel = token_tiles * kPanelTokens * ((cols / kQK + 7) / 8) * kAvx2ActGroupBytes;
  const int64_t panel = panel_scratch_bytes(cols);
  return row_path + std::max({tile_path, amx_int8, amx_bf16, avx2_panel}) + n_threads * (panel + 128) + 4096;
}

void matmul(const TensorView& w, const float* x, int64_t n_tokens, float* y, ThreadPool* pool) {
  const int64_t rows = w.rows(), cols = w.cols();
  assert(cols % dtype_traits(w.dtype).block_elems == 0);
  if (rows == 0 || n_tokens <= 0) return;
  const IsaTable& table = active_table();
  // the table's first row that takes this batch (panels, then one token's gemv: ahead of the
  // tiles, as the AVX-512 Q8_0 tile streams a decode step's weights slower than the gemv,
  // docs/benchmarks.md; then tiles), else the row kernels
  const KernelRow* row = kernel_row_for(table, w.dtype, n_tokens, cols);
  if (row != nullptr && row->panel != nullptr) {
    const PanelJob job{row->panel, &w, y};
    matmul_panels(&job, 1, x, n_tokens, pool);
    return;
  }
  if (row != nullptr && row->tile != nullptr) {
    matmul_tiled(*row->tile, w, x, n_tokens, y, pool);
    return;
  }
  const GemvFn gemv = row != nullptr ? row->gemv : nullptr;
  int64_t stride_bytes = 0;
  const std::byte* acts = prepare_acts(w.dtype, x, n_tokens, cols, &stride_bytes);
  const RowTileFn fn = table.rows->fn[static_cast<int>(w.dtype)];
  const int64_t w_row_bytes = w.row_bytes();
  auto run_rows = [&](int64_t begin, int64_t end) {
    if (gemv != nullptr) return gemv(w.data + begin * w_row_bytes, w_row_bytes, end - begin, acts, cols, y + begin);
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

void matmul_same_input(const MatmulOut* outs, int n_outs, const float* x, int64_t n_tokens, ThreadPool* pool) {
  constexpr int kMaxJobs = 4;
  PanelJob jobs[kMaxJobs];
  bool shared = n_outs > 1 && n_outs <= kMaxJobs && n_tokens > 0;
  const IsaTable& table = active_table();
  for (int i = 0; i < n_outs && shared; ++i) {
    const TensorView& w = *outs[i].w;
    const KernelRow* row = kernel_row_for(table, w.dtype, n_tokens, w.cols());
    const PanelKernel* k = row != nullptr ? row->panel : nullptr;
    shared = k != nullptr && w.cols() == outs[0].w->cols() &&
             (i == 0 || (k->prepare == jobs[0].k->prepare && k->act_bytes == jobs[0].k->act_bytes));
    jobs[i] = {k, &w, outs[i].y};
  }
  if (shared) return matmul_panels(jobs, n_outs, x, n_tokens, pool);
  for (int i = 0; i < n_outs; ++i) matmul(*outs[i].w, x, n_tokens, outs[i].y, pool);
}

}  // namespace plimsoll::kernels
