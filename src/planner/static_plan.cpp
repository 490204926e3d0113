// The static plan and its reverse: a limit -> sequences that fit, and a number
// of sequences -> the smallest limit, both through plan_serve_memory.
#include "planner/static_plan.h"

#include "core/bytes.h"
#include "core/thread_pool.h"
#include "memory/memory_budget.h"
#include "memory/resident_model.h"

namespace plimsoll::planner {

ServeConfig serve_config_for(const PlanRequest& r) {
  ServeConfig c = r.serve;
  c.engine.model_path = r.model.path;
  c.engine.memory_limit_bytes = r.memory_limit_bytes;
  c.engine.max_total_tokens = r.prompt_tokens + r.max_new_tokens;
  c.max_input_tokens = r.prompt_tokens;
  return c;
}

ModelFacts serve_model_facts(const PlanRequest& r) {
  ModelFacts m;
  m.config = r.model.config;
  m.weights_bytes = r.model.weights_bytes;
  m.runtime_bytes = planned_runtime_bytes(r.model.runtime_base_bytes, 0);
  return m;
}

Result<StaticPlan> make_static_plan(const PlanRequest& r) {
  if (r.prompt_tokens < 1 || r.max_new_tokens < 1) {
    return make_error(ErrorCode::kInvalidArgument, "--prompt-tokens and --max-new-tokens must be at least 1");
  }
  const int64_t total = r.prompt_tokens + r.max_new_tokens;
  if (total > r.model.config.max_seq_len) {
    return make_error(ErrorCode::kInvalidArgument,
                      "--prompt-tokens + --max-new-tokens = " + std::to_string(total) +
                          " exceeds the model's context of " + std::to_string(r.model.config.max_seq_len));
  }
  PLIMSOLL_ASSIGN(MemoryBudget budget,
                  resolve_memory_budget(r.memory_limit_bytes, r.serve.engine.memory_fraction));
  StaticPlan s;
  s.request = r;
  s.budget_bytes = budget.budget_bytes;
  PLIMSOLL_ASSIGN(s.plan, plan_serve_memory(serve_config_for(r), serve_model_facts(r), ThreadPool::hardware_threads(),
                                            budget.budget_bytes));
  s.engine_threads = s.plan.workspace.n_threads;
  s.sequence_tokens = s.plan.max_total_tokens;
  s.max_concurrent_sequences = s.plan.full_sequences();
  s.safe_client_batch_size = std::max<int64_t>(1, s.max_concurrent_sequences);
  return s;
}

namespace {

bool holds(PlanRequest& r, int64_t limit_bytes, int64_t sequences) {
  r.memory_limit_bytes = limit_bytes;
  auto p = make_static_plan(r);
  return p.ok() && p->max_concurrent_sequences >= sequences;
}

}  // namespace

Result<int64_t> required_memory_limit(PlanRequest r, int64_t sequences) {
  if (sequences < 1) return make_error(ErrorCode::kInvalidArgument, "--target-concurrency must be at least 1");
  r.memory_limit_bytes = kGiB;
  if (auto p = make_static_plan(r); !p.ok() && p.error().code != ErrorCode::kOutOfMemory) return p.error();
  int64_t hi_mib = 64;
  while (!holds(r, hi_mib * kMiB, sequences)) {
    if (hi_mib > (int64_t{1} << 30)) {  // 1 PiB
      return make_error(ErrorCode::kOutOfMemory, "no memory limit up to 1 PiB holds " + std::to_string(sequences) +
                                                     " sequences");
    }
    hi_mib *= 2;
  }
  int64_t lo_mib = 0;  // lo never holds, hi always does
  while (hi_mib - lo_mib > 1) {
    const int64_t mid = lo_mib + (hi_mib - lo_mib) / 2;
    (holds(r, mid * kMiB, sequences) ? hi_mib : lo_mib) = mid;
  }
  return hi_mib * kMiB;
}

}  // namespace plimsoll::planner
