// Scheduler: the policy of the engine thread — who runs. Starts waiting
// sequences when their whole KV need (prompt + max_new_tokens, reserved to
// completion) fits the free blocks — less the leading prompt blocks found in
// the prefix cache, which are shared and not computed again — in weighted
// fair order across tenants (sched/tenants.h: the least tokens served for its
// weight first; shares of the KV pool and slots taken back by preemption)
// and across submissions within one, and builds each step (decode
// tokens first, then prefill chunks shared by tenant under the step's token
// budget). After the step it records the K/V written, hands each event the
// output processor built to its request (sched/output_processor.h), and
// frees the blocks of finished sequences. It never touches tensors or logits.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <vector>

#include "sched/fault.h"
#include "sched/sequence.h"
#include "sched/step.h"
#include "sched/tenants.h"

namespace plimsoll::sched {

struct SchedulerLimits {
  int64_t step_tokens = 512;           // tokens per step (max_batch_prefill_tokens)
  int64_t step_seqs = 64;              // sequences per step (max_batch_size)
  int64_t max_skips = 16;              // steps a blocked head may be overtaken before it reserves
  TenantTable tenants;                 // empty: one default tenant
  // false: each tenant's prompts are cached for that tenant alone (another cannot
  // learn them from its cache hits' timing); true: one cache for all.
  bool prefix_cache_across_tenants = false;
};

// One tenant's share of the engine now, counted each step.
struct TenantUse {
  int64_t waiting = 0;    // sequences queued (fed in, no blocks yet)
  int64_t running = 0;    // sequences holding blocks
  int64_t kv_blocks = 0;  // blocks they hold
  int64_t served_tokens = 0;  // prompt and generated tokens computed for it, since start
  int64_t preemptions = 0;    // of its sequences, since start
};

class Scheduler {
 public:
  // `tokenizer`: each new Sequence's (its decoder and prompt records).
  Scheduler(SchedulerLimits limits, KvBlockPool& pool, const TextTokenizer& tokenizer);

  // Adds a submission whose items are turned into waiting sequences as
  // capacity allows (a client batch is fed in, not queued all at once).
  void add(std::unique_ptr<Submission> submission);
  // Drops every sequence of the ticket, frees its blocks; no more events.
  void cancel(uint64_t ticket);
  // Ends everything with an error event (shutdown, or a fault no sequence can be blamed for).
  void abort_all(const Error& error);
  // A step that threw or failed: ends the plan's unfinished sequences with an error
  // event and returns their blocks; every other sequence goes on. An empty plan (the
  // fault came before there was one) ends every sequence: none can be blamed.
  void fail_step(const StepPlan& plan, const Error& error);
  // Faults contained so far: per sequence in schedule/deliver, and each fail_step.
  int64_t faults() const { return faults_; }
  int64_t preemptions() const { return preemptions_; }
  // Tokens computed again after preemptions that gave their blocks back.
  int64_t recomputed_tokens() const { return recomputed_tokens_; }
  void set_fault_hook(FaultHook hook) { fault_hook_ = std::move(hook); }
  void inject_fault(FaultSite site, uint64_t ticket = 0) const {
    if (fault_hook_) fault_hook_(site, ticket);
  }

  // Phases of one step: schedule, (the engine's step), record_written,
  // (the output processor's process), deliver.
  StepPlan schedule();
  // The plan ran: each sequence's K/V covers its plan tokens now; blocks that
  // became full are published to the prefix cache (before any is freed).
  void record_written(const StepPlan& plan);
  // Hands each output's event to its request — a finished sequence's blocks
  // are back first — ends a faulted sequence with an error event, and drops
  // the finished. Events are moved out of `outputs`.
  void deliver(StepOutputs& outputs);

  bool idle() const { return running_.empty() && waiting_.empty() && submissions_.empty(); }
  int64_t waiting_count() const;
  int64_t waiting_tokens() const;
  int64_t running_count() const { return static_cast<int64_t>(running_.size()); }
  // Per tenant (the table's order), as of the last schedule().
  const std::vector<TenantUse>& tenant_use() const { return use_; }
  const TenantTable& tenants() const { return limits_.tenants; }
  int64_t last_batch_size() const { return last_batch_size_; }
  int64_t last_batch_tokens() const { return last_batch_tokens_; }
  // Prefix cache: prompt tokens of started sequences looked up, and found (not computed).
  int64_t prefix_queried_tokens() const { return prefix_queried_tokens_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }

 private:
  void feed_waiting();
  void count_use();
  void lift_returning();
  size_t next_to_start(const std::vector<char>& passed) const;
  bool at_cap(const Sequence& seq) const;
  bool make_room_for(const Sequence& seq, std::vector<char>& passed);
  void preempt(size_t running_index, std::vector<char>& passed, bool keep_blocks);
  void drop_blocks(Sequence& seq);
  void charge(Sequence& seq, int64_t end);
  void start_waiting();
  enum class Start { kStarted, kNoRoom, kWaitForPrefix };
  Start try_start(Sequence& seq);
  void add_decodes(StepPlan& plan, int64_t& budget);
  void add_prefills(StepPlan& plan, int64_t& budget);
  void send(Sequence& seq, TokenEvent&& event);
  void release(Sequence& seq);
  void remove_finished();
  void fail(Sequence& seq, const Error& error);  // error final event, blocks returned
  void fail_item(Submission& sub, size_t index, const std::string& what);  // before it had a Sequence
  void finish_submission_item(Submission& sub);

  SchedulerLimits limits_;
  KvBlockPool& pool_;
  const TextTokenizer& tokenizer_;
  std::list<std::unique_ptr<Submission>> submissions_;  // with pending items or unfinished ones
  std::deque<std::unique_ptr<Sequence>> waiting_;  // queued, no blocks yet
  std::vector<std::unique_ptr<Sequence>> running_; // holding blocks
  std::vector<TenantUse> use_;                     // [tenants]
  // [tenants] tokens served per unit of weight (each token computed once; a
  // returning tenant lifted to the least of those that kept working): the
  // first key of the start order, and a tenant takes back its share only from
  // tenants served as much or more.
  std::vector<double> service_;
  std::vector<char> active_;                       // [tenants] had work at the last count_use
  std::vector<int64_t> cap_blocks_;                // [tenants] max_kv_share of the pool; 0: none
  int64_t last_batch_size_ = 0;
  int64_t last_batch_tokens_ = 0;
  int64_t faults_ = 0;
  int64_t preemptions_ = 0;
  int64_t recomputed_tokens_ = 0;
  int64_t prefix_queried_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  FaultHook fault_hook_;
};

}  // namespace plimsoll::sched
