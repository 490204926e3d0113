// OutputProcessor: from a step's logits to the event each sequence sends —
// the grammar mask, sampling, detokenizing, end-of-sequence ids, stop
// sequences, max_new_tokens, and building the event (logprobs, alternatives,
// the prompt's records, the final figures). It decides when a sequence is
// finished (seq.finish) but never touches blocks or sinks: the scheduler
// releases and delivers (Scheduler::deliver). Engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/batch_engine.h"
#include "engine/grammar/token_trie.h"
#include "engine/sampler.h"
#include "sched/fault.h"
#include "sched/mask_ahead.h"
#include "sched/step.h"

namespace plimsoll::sched {

class OutputProcessor {
 public:
  // `extra_eos_ids`: ids that end a sequence besides the tokenizer's EOS
  // (generation_config.json eos_token_id, an id or a list); finish reason
  // eos_token, unless ignore_eos. `trie`: the tokenizer's TokenTrie, built at
  // start-up where the plan can count it (server/engine_setup); null: built here, now.
  // `mask_slots`: grammar masks computed ahead of sampling at once (MaskAhead;
  // the most sequences a step samples; 0: every mask on the engine thread).
  OutputProcessor(const TextTokenizer& tokenizer, const std::vector<int32_t>& extra_eos_ids,
                  std::shared_ptr<const TokenTrie> trie = nullptr, int64_t mask_slots = 0);

  // Starts the grammar masks of the plan's constrained sequences that want
  // logits, to run beside the forward pass; process() consumes them. Call
  // clear_masks() before anything may release a sequence of the plan.
  void start_masks(const StepPlan& plan);
  void clear_masks();

  // logits: [n_want, vocab_size], rows in the order of plan entries with want_logits.
  // Returns one output per such entry (valid until the next call; its events may be moved out).
  StepOutputs& process(const StepPlan& plan, std::span<const float> logits, int64_t vocab_size);
  // One sequence's row: samples its next token (appended to seq.tokens) and
  // builds its event; a fault (an exception) is returned, not thrown.
  // logits: [vocab_size].
  SequenceOutput process_one(Sequence& seq, std::span<const float> logits);
  // One prompt row of a prefill (PromptRows): the logprob of the prompt token after `pos`.
  void record_prompt_row(Sequence& seq, int64_t pos, std::span<const float> logits);

  // Whether `id` ends a sequence: the tokenizer's EOS or an extra EOS id.
  bool is_end_id(int32_t id) const;
  void set_fault_hook(FaultHook hook) { fault_hook_ = std::move(hook); }

 private:
  SampledToken sample(Sequence& seq, std::span<const float> logits);
  void constrain(Sequence& seq, std::span<const float> logits);
  static int64_t tokens_left(const Sequence& seq);  // the grammar's length budget, this token included
  TokenEvent build_event(Sequence& seq, const SampledToken& token);
  void set_finish(Sequence& seq, int32_t id, TokenEvent& ev);
  void fill_final(Sequence& seq, TokenEvent& ev);

  const TextTokenizer& tokenizer_;
  std::vector<int32_t> end_ids_;                   // extra eos ids, then the tokenizer's eos
  std::shared_ptr<const TokenTrie> trie_;          // the vocabulary as a prefix tree, for grammar masks
  SamplerScratch scratch_;
  GrammarScratch grammar_scratch_;
  std::unique_ptr<MaskAhead> mask_ahead_;          // null without mask slots
  std::vector<float> logits_copy_;                 // [vocab] sampling works on a copy
  std::vector<SampledToken> alternatives_;         // [top_n] of the token being emitted
  StepOutputs outputs_;                            // the last step's, reused
  FaultHook fault_hook_;
};

// The engine's rows for want_all_logits spans of one plan: each becomes the
// next prompt token's logprob (and alternatives) of its sequence.
class PromptRows final : public LogitRowSink {
 public:
  PromptRows(OutputProcessor& output, const StepPlan& plan) : output_(output), plan_(plan) {}
  void row(size_t seq, int64_t pos, std::span<const float> logits) override;

 private:
  OutputProcessor& output_;
  const StepPlan& plan_;
};

}  // namespace plimsoll::sched
