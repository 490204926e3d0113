// Scheduler: the policy of the engine thread. Admits waiting sequences when
// their whole KV need (prompt + max_new_tokens, reserved to completion) fits
// the free blocks — less the leading prompt blocks found in the prefix cache,
// which are shared and not computed again — builds each step (decode tokens first, then prefill chunks
// under the step's token budget), and applies the step's logits: sampling,
// stop criteria, token events, freeing blocks. It never touches tensors.
#pragma once

#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <span>
#include <vector>

#include "engine/batch_engine.h"
#include "sched/fault.h"
#include "sched/sequence.h"

namespace plimsoll::sched {

struct SchedulerLimits {
  int64_t step_tokens = 512;           // tokens per step (max_batch_prefill_tokens)
  int64_t step_seqs = 64;              // sequences per step (max_batch_size)
  int64_t max_skips = 16;              // steps a blocked head may be overtaken before it reserves
  // Ids that end a sequence besides the tokenizer's EOS (generation_config.json
  // eos_token_id, an id or a list); finish reason eos_token, unless ignore_eos.
  std::vector<int32_t> extra_eos_ids;
};

// What one step runs: SeqStep for the engine, and whose it is.
struct StepPlan {
  std::vector<SeqStep> steps;
  std::vector<Sequence*> owners;
  bool wants_rows = false;  // a step has want_all_logits (prompt logprobs): pass PromptRows to the engine
  bool empty() const { return steps.empty(); }
};

class Scheduler;

// The engine's rows for want_all_logits spans of one plan: each becomes the
// next prompt token's logprob (and alternatives) of its sequence.
class PromptRows final : public LogitRowSink {
 public:
  PromptRows(Scheduler& scheduler, const StepPlan& plan) : scheduler_(scheduler), plan_(plan) {}
  void row(size_t seq, int64_t pos, std::span<const float> logits) override;

 private:
  Scheduler& scheduler_;
  const StepPlan& plan_;
};

class Scheduler {
 public:
  // `trie`: the tokenizer's TokenTrie, built at start-up where the plan can
  // count it (server/engine_setup); null: built here, now.
  Scheduler(SchedulerLimits limits, KvBlockPool& pool, const TextTokenizer& tokenizer,
            std::shared_ptr<const TokenTrie> trie = nullptr);

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
  // Faults contained so far: per sequence in schedule/update, and each fail_step.
  int64_t faults() const { return faults_; }
  void set_fault_hook(FaultHook hook) { fault_hook_ = std::move(hook); }
  void inject_fault(FaultSite site, uint64_t ticket = 0) const {
    if (fault_hook_) fault_hook_(site, ticket);
  }

  // Phases of one step.
  StepPlan schedule();
  // logits: [n_want, vocab], rows in the order of plan entries with want_logits.
  void update(const StepPlan& plan, std::span<const float> logits, int64_t vocab_size);
  // One prompt row of a prefill (PromptRows): the logprob of the prompt token after `pos`.
  void record_prompt_row(Sequence& seq, int64_t pos, std::span<const float> logits);

  bool idle() const { return running_.empty() && waiting_.empty() && submissions_.empty(); }
  int64_t waiting_count() const;
  int64_t waiting_tokens() const;
  int64_t running_count() const { return static_cast<int64_t>(running_.size()); }
  int64_t last_batch_size() const { return last_batch_size_; }
  int64_t last_batch_tokens() const { return last_batch_tokens_; }
  // Prefix cache: prompt tokens of admitted sequences looked up, and found (not computed).
  int64_t prefix_queried_tokens() const { return prefix_queried_tokens_; }
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }

 private:
  void feed_waiting();
  void admit();
  enum class Admit { kAdmitted, kNoRoom, kWaitForPrefix };
  Admit try_admit(Sequence& seq);
  void add_decodes(StepPlan& plan, int64_t& budget);
  void add_prefills(StepPlan& plan, int64_t& budget);
  void finish(Sequence& seq, FinishReason reason);
  void emit_token(Sequence& seq, const SampledToken& token);
  void release(Sequence& seq);
  void remove_finished();
  void fail(Sequence& seq, const Error& error);  // error final event, blocks returned
  void fail_item(Submission& sub, size_t index, const std::string& what);  // before it had a Sequence
  void sample_and_emit(Sequence& seq, std::span<const float> logits);
  void constrain(Sequence& seq);
  void finish_submission_item(Submission& sub);

  SchedulerLimits limits_;
  KvBlockPool& pool_;
  const TextTokenizer& tokenizer_;
  SamplerScratch scratch_;
  std::vector<float> logits_copy_;                 // [vocab] sampling works on a copy
  std::vector<SampledToken> alternatives_;         // [top_n] of the token being emitted
  std::shared_ptr<const TokenTrie> trie_;          // the vocabulary as a prefix tree, for grammar masks
  GrammarScratch grammar_scratch_;
  std::vector<int32_t> end_ids_;                   // eos + extra eos ids, for the grammar mask
  std::list<std::unique_ptr<Submission>> submissions_;  // with pending items or unfinished ones
  std::deque<std::unique_ptr<Sequence>> waiting_;  // admitted to the queue, no blocks yet
  std::vector<std::unique_ptr<Sequence>> running_; // holding blocks
  int64_t last_batch_size_ = 0;
  int64_t last_batch_tokens_ = 0;
  int64_t faults_ = 0;
  int64_t prefix_queried_tokens_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  FaultHook fault_hook_;
};

}  // namespace plimsoll::sched
