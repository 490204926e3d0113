// The plain data of one engine step, between its three parts: the scheduler
// decides who runs (StepPlan), the engine computes the plan's logits, and the
// output processor turns them into each sequence's event (StepOutputs), which
// the scheduler hands to the requests.
#pragma once

#include <optional>
#include <vector>

#include "core/result.h"
#include "engine/batch_engine.h"
#include "sched/request.h"
#include "sched/sequence.h"

namespace plimsoll::sched {

// What one step runs: SeqStep for the engine, and whose it is.
struct StepPlan {
  std::vector<SeqStep> steps;
  std::vector<Sequence*> owners;  // [steps.size()]
  bool wants_rows = false;  // a step has want_all_logits (prompt logprobs): pass PromptRows to the engine
  bool empty() const { return steps.empty(); }
};

// What one sequence got from a step: the event of its new token (final when
// the token ended it), or the fault that ended it (no event).
struct SequenceOutput {
  Sequence* seq = nullptr;
  TokenEvent event;
  std::optional<Error> fault;  // set: sampling or detokenizing threw; the sequence ends with this error
};

// One step's outputs: [plan entries with want_logits], in plan order. The
// output processor keeps one and reuses its capacity (step_seqs entries at
// most) from step to step.
struct StepOutputs {
  std::vector<SequenceOutput> outputs;
};

}  // namespace plimsoll::sched
