// Sequence: the engine thread's state for one admitted item of a submission —
// its tokens, KV blocks, sampler, stop matcher and stream decoder. The
// scheduler owns the sequence and its blocks (kv_len, table, prefix-cache
// fields, skipped_steps); the output processor its output state (sampler,
// stops, grammar, decoder, prefill records, logprob_sum, finish) and appends
// the generated tokens.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/grammar/token_trie.h"
#include "engine/sampler.h"
#include "engine/stop.h"
#include "kv/block_pool.h"
#include "sched/request.h"
#include "tokenizer/stream_decoder.h"

namespace plimsoll::sched {

using Clock = std::chrono::steady_clock;

struct Submission;  // the client call the sequence belongs to

struct Sequence {
  // Seeds the sampler with request.params.seed, else a random seed.
  Sequence(Submission* owner, size_t index, GenerationRequest request, const TextTokenizer& tokenizer);

  Submission* owner;
  size_t index;                      // position in the submission
  GenerationRequest request;
  std::vector<int32_t> tokens;       // prompt, then generated; reserved to the full length
  int64_t prompt_len = 0;
  int64_t kv_len = 0;                // tokens whose K/V are in the cache
  BlockTable table;                  // blocks for prompt + max_new_tokens, taken when it starts
  // Prefix cache (sched/prefix_cache.h): the key of each full block (the
  // prompt's when first tried to start, later ones as they fill; reserved),
  // how many leading blocks are in the cache (found there or published), and
  // the prompt tokens found there when it started (not computed).
  std::vector<uint64_t> block_keys;
  int64_t published_blocks = 0;
  int64_t cached_tokens = 0;
  Sampler sampler;
  StopMatcher stops;
  GrammarMatcher grammar;            // inactive without request.params.grammar
  int32_t mask_slot = -1;            // its mask being computed beside the step (OutputProcessor::start_masks)
  StreamDecoder decoder;
  std::vector<TokenInfo> prefill;                 // prompt_details: filled by the prefill's rows, sent with the first token
  std::vector<std::vector<TokenInfo>> prefill_top;  // prompt_top_n alternatives per prompt token
  double logprob_sum = 0;                         // of the generated tokens
  std::optional<FinishReason> finish;
  bool final_sent = false;           // its final event (result or error) went to the sink
  Clock::time_point queued_at = Clock::now();
  std::optional<Clock::time_point> started_at;
  int64_t skipped_steps = 0;         // times smaller sequences started ahead of it
  // The tokens whose K/V a (re)start computes before decoding: the prompt, or
  // after a preemption (its blocks given back) every token but the last, which
  // the next decode step feeds.
  int64_t prefill_end = 0;
  bool requeued = false;             // preempted and waiting to start again
  // Tokens whose K/V were computed at least once: what a restart computes
  // again below it is not counted as served to its tenant (the preemption,
  // not the tenant, caused it).
  int64_t served_len = 0;
  // Tokens charged to its tenant's service (Scheduler::service_): the prompt
  // when it starts, each later token as it is computed.
  int64_t charged_len = 0;

  // Running, or waiting after a preemption that kept its blocks (the pool had
  // room): then it resumes where it stopped, needing only a slot.
  bool holds_blocks() const { return !table.blocks.empty(); }

  int64_t generated() const { return static_cast<int64_t>(tokens.size()) - prompt_len; }
  int64_t total_tokens() const { return prompt_len + request.params.max_new_tokens; }
  bool prefilling() const { return kv_len < prefill_end; }
};

// One client call: one or many items, one sink, one ticket.
struct Submission {
  uint64_t ticket = 0;
  EventSink sink;
  std::deque<GenerationRequest> pending;   // items not yet turned into sequences (front = next)
  size_t next_index = 0;                   // index of pending.front() in the original list
  size_t unfinished = 0;                   // items without their final event yet
  bool cancelled = false;
  Clock::time_point submitted_at = Clock::now();
  std::shared_ptr<void> charge;            // admission's byte charge, held while the engine has it
  int32_t tenant = 0;                      // its items' tenant (sched/tenants.h)
  // Salts its prefix-cache keys (sched/prefix_cache.h): 0 shares the cache with
  // every submission of salt 0; the tenant's index + 1 keeps it to the tenant.
  int32_t prefix_salt = 0;
  // Its sequences waiting and running, counted by the scheduler each step.
  int64_t waiting = 0, running = 0;
};

}  // namespace plimsoll::sched
