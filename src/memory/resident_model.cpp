// The resident-set prediction: which parts of the plan are touched, and when,
// so that a measured peak (VmHWM, cgroup peak) can be checked against it.
#include "memory/resident_model.h"

#include <algorithm>

namespace plimsoll {

int64_t planned_runtime_bytes(int64_t resident_at_start_bytes, int64_t extra_runtime_bytes) {
  return resident_at_start_bytes + kRuntimeMarginBytes + extra_runtime_bytes;
}

int64_t warm_up_kv_blocks(const MemoryPlan& plan) {
  const int64_t bt = plan.inputs.block_tokens;
  const int64_t extra_seqs = std::min(plan.workspace.step_seqs, plan.workspace.step_tokens) - 1;
  const int64_t long_tokens = plan.workspace.step_tokens - extra_seqs;
  return std::min(plan.kv_blocks, (long_tokens + bt - 1) / bt);
}

int64_t kv_blocks_for_sequences(const MemoryPlan& plan, int64_t sequences, int64_t tokens_each) {
  const int64_t bt = plan.inputs.block_tokens;
  return sequences * ((tokens_each + bt - 1) / bt);
}

ResidentPrediction predict_resident(const MemoryPlan& plan, int64_t runtime_base_bytes,
                                    int64_t active_kv_blocks) {
  ResidentPrediction r;
  r.runtime_base_bytes = runtime_base_bytes;
  r.weights_bytes = plan.weights_bytes;
  r.workspace_bytes = plan.workspace_bytes;
  r.kv_blocks = std::min(plan.kv_blocks, std::max(active_kv_blocks, warm_up_kv_blocks(plan)));
  r.kv_bytes = r.kv_blocks * plan.kv_block_bytes;
  r.kv_bookkeeping_bytes = plan.kv_bookkeeping_bytes;
  return r;
}

ResidentPrediction predict_resident_for_tokens(const MemoryPlan& plan, int64_t runtime_base_bytes,
                                               int64_t active_kv_tokens) {
  return predict_resident(plan, runtime_base_bytes, kv_blocks_for_sequences(plan, 1, active_kv_tokens));
}

}  // namespace plimsoll
