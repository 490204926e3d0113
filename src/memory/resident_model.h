// What a running engine holds resident, as the memory plan predicts it: the
// runtime measured at start + weights + step workspace + KV blocks written.
#pragma once

#include <cstdint>

#include "memory/memory_plan.h"

namespace plimsoll {

// The margin engine set-up adds to the resident bytes measured before
// planning: thread stacks, allocator slack (see server/engine_setup.cpp).
inline constexpr int64_t kRuntimeMarginBytes = int64_t{32} << 20;

// The runtime part of the plan: resident at start + margin + extra (HTTP buffers).
int64_t planned_runtime_bytes(int64_t resident_at_start_bytes, int64_t extra_runtime_bytes);

// KV blocks the engine's warm-up step writes (BatchEngine::warm_up: one long
// sequence of T - (B - 1) tokens); they stay resident and are handed out first.
int64_t warm_up_kv_blocks(const MemoryPlan& plan);

// KV blocks that `sequences` sequences of `tokens_each` tokens hold.
int64_t kv_blocks_for_sequences(const MemoryPlan& plan, int64_t sequences, int64_t tokens_each);

// The parts of the resident set the model predicts. The KV pool is mapped
// lazily and never returned to the OS, so the KV part is the largest number
// of blocks ever written (including the warm-up's), not the pool.
struct ResidentPrediction {
  int64_t runtime_base_bytes = 0;  // measured before planning (binary, libraries, tokenizer)
  int64_t weights_bytes = 0;       // every tensor, touched by the warm-up
  int64_t workspace_bytes = 0;     // the step buffers, touched by the warm-up
  int64_t kv_blocks = 0;           // blocks written at the peak
  int64_t kv_bytes = 0;            // kv_blocks x block bytes
  int64_t kv_bookkeeping_bytes = 0;  // the pool's per-block bookkeeping, written at creation

  int64_t total_bytes() const {
    return runtime_base_bytes + weights_bytes + workspace_bytes + kv_bytes + kv_bookkeeping_bytes;
  }
};

// Resident bytes expected when at most `active_kv_blocks` blocks have been in use.
ResidentPrediction predict_resident(const MemoryPlan& plan, int64_t runtime_base_bytes,
                                    int64_t active_kv_blocks);
// The same for `active_kv_tokens` tokens in whole blocks (one sequence's rounding).
ResidentPrediction predict_resident_for_tokens(const MemoryPlan& plan, int64_t runtime_base_bytes,
                                               int64_t active_kv_tokens);

}  // namespace plimsoll
