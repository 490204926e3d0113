// scratch: the per-thread buffers the matmul kernels reuse across calls. Each
// only grows, so steady-state calls do not allocate; one panel buffer per
// thread is shared by every ISA file (defined once, in a file built without ISA
// flags), which is what matmul_scratch_bytes counts.
#pragma once

#include <cstddef>
#include <cstdint>

namespace plimsoll::kernels {

// The calling thread's buffer of at least `bytes`, 64-byte aligned, for the
// activations one matmul call prepares (read by pool workers while the caller
// waits in parallel_for).
std::byte* thread_scratch(size_t bytes);

// The calling thread's buffer of at least `bytes`, 64-byte aligned, for a
// weight panel a panel kernel (AMX, AVX-512 broadcast, AVX2, NEON) unpacks or
// widens once per call.
std::byte* panel_scratch(size_t bytes);

// The most panel_scratch any kernel asks of one thread for rows of up to
// `cols` columns, on any ISA level (scratch.cpp; the figures: layout_bytes.h).
int64_t panel_scratch_bytes(int64_t cols);

// Grows the calling thread's panel buffer to panel_scratch_bytes(cols) now,
// so that no later call on this thread allocates (run on every pool thread at
// warm-up: which thread runs which chunk of a job is decided at run time).
void reserve_panel_scratch(int64_t cols);

}  // namespace plimsoll::kernels
