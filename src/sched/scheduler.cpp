// Scheduling policy: feed, admit (reserve to completion), build the step
// (decode-first, chunked prefill), apply logits (sample, stop, emit, free).
#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <spdlog/spdlog.h>

#include "sched/prefix_cache.h"

namespace plimsoll::sched {
namespace {

// Ends one item with an error event. A sink that throws is logged, never rethrown: the
// final counts as sent (EngineService's wrapper settles the ticket either way).
void send_error_final(Submission& sub, size_t index, const Error& error) noexcept {
  try {
    TokenEvent ev;
    ev.index = index;
    ev.token.id = -1;
    ev.final = true;
    ev.error = error;
    sub.sink(std::move(ev));
  } catch (...) {
    spdlog::error("request {} item {}: its error event could not be delivered: {}", sub.ticket, index,
                  describe_current_exception());
  }
}

// Sampler alternatives as token records (the token's own text, no context).
void to_token_infos(const std::vector<SampledToken>& alternatives, const TextTokenizer& tok,
                    std::vector<TokenInfo>& out) {
  out.clear();
  out.reserve(alternatives.size());
  for (const SampledToken& a : alternatives) {
    out.push_back({a.id, a.logprob, tok.piece_string(-1, a.id), tok.is_special(a.id)});
  }
}

}  // namespace

Sequence::Sequence(Submission* owner_, size_t index_, GenerationRequest request_, const TextTokenizer& tokenizer,
                   uint64_t seed)
    : owner(owner_),
      index(index_),
      request(std::move(request_)),
      prompt_len(static_cast<int64_t>(request.prompt_ids.size())),
      sampler(request.params, seed),
      stops(request.params.stop),
      grammar(request.params.grammar),
      decoder(tokenizer, request.prompt_ids.empty() ? -1 : request.prompt_ids.back()) {
  tokens.reserve(static_cast<size_t>(total_tokens()));
  tokens = request.prompt_ids;
  sampler.observe_prompt(tokens);
  if (request.prompt_details && !tokens.empty()) {  // the first token has no logprob; the prefill's rows add the rest
    prefill.reserve(static_cast<size_t>(prompt_len));
    prefill.push_back({tokens[0], std::numeric_limits<float>::quiet_NaN(), tokenizer.piece_string(-1, tokens[0]),
                       tokenizer.is_special(tokens[0])});
    if (request.prompt_top_n > 0) {
      prefill_top.reserve(static_cast<size_t>(prompt_len));
      prefill_top.emplace_back();
    }
  }
}

void PromptRows::row(size_t seq, int64_t pos, std::span<const float> logits) {
  scheduler_.record_prompt_row(*plan_.owners[seq], pos, logits);
}

Scheduler::Scheduler(SchedulerLimits limits, KvBlockPool& pool, const TextTokenizer& tokenizer,
                     std::shared_ptr<const TokenTrie> trie)
    : limits_(limits),
      pool_(pool),
      tokenizer_(tokenizer),
      trie_(trie ? std::move(trie) : std::make_shared<const TokenTrie>(TokenTrie::build(tokenizer))) {
  grammar_scratch_.reserve(*trie_);
  end_ids_.assign(limits_.extra_eos_ids.begin(), limits_.extra_eos_ids.end());
  end_ids_.push_back(tokenizer_.eos_id());
}

void Scheduler::add(std::unique_ptr<Submission> submission) {
  submission->unfinished = submission->pending.size();
  try {
    submissions_.push_back(std::move(submission));  // strong guarantee: still ours if it throws
  } catch (...) {
    const std::string what = describe_current_exception();
    for (size_t i = 0; i < submission->pending.size(); ++i) fail_item(*submission, i, what);
  }
}

void Scheduler::fail_item(Submission& sub, size_t index, const std::string& what) {
  ++faults_;
  spdlog::error("engine fault queueing request {} item {}: {}; that item ends with an error", sub.ticket, index,
                what);
  send_error_final(sub, index, fault_error(what));
  finish_submission_item(sub);
}

int64_t Scheduler::waiting_count() const {
  int64_t n = static_cast<int64_t>(waiting_.size());
  for (const auto& s : submissions_) n += static_cast<int64_t>(s->pending.size());
  return n;
}

int64_t Scheduler::waiting_tokens() const {
  int64_t n = 0;
  for (const auto& s : waiting_) n += s->total_tokens();
  for (const auto& sub : submissions_) {
    for (const auto& r : sub->pending) n += static_cast<int64_t>(r.prompt_ids.size()) + r.params.max_new_tokens;
  }
  return n;
}

// Turns pending items into waiting sequences, round-robin over submissions,
// keeping the waiting line short (what cannot run soon stays compact).
void Scheduler::feed_waiting() {
  const size_t target = static_cast<size_t>(2 * limits_.step_seqs);
  bool moved = true;
  while (waiting_.size() < target && moved) {
    moved = false;
    for (auto& sub : submissions_) {
      if (sub->pending.empty() || waiting_.size() >= target) continue;
      GenerationRequest req = std::move(sub->pending.front());
      sub->pending.pop_front();  // O(1): a client batch of any length is fed in linearly
      const size_t index = sub->next_index++;
      moved = true;
      try {
        inject_fault(FaultSite::kAdmit, sub->ticket);
        const uint64_t seed = req.params.seed.value_or(random_seed());
        waiting_.push_back(std::make_unique<Sequence>(sub.get(), index, std::move(req), tokenizer_, seed));
        waiting_.back()->queued_at = sub->submitted_at;
      } catch (...) {
        fail_item(*sub, index, describe_current_exception());
      }
    }
  }
  submissions_.remove_if([](const std::unique_ptr<Submission>& s) { return s->unfinished == 0; });
}

// Reserves to completion: the blocks found in the prefix cache are shared (a
// reclaimable one costs a free block, as taking it makes it unreclaimable),
// the rest newly owned. Prefill then starts after the shared blocks.
Scheduler::Admit Scheduler::try_admit(Sequence& seq) {
  const int64_t bt = pool_.block_tokens();
  const int64_t need = blocks_for_tokens(seq.total_tokens(), bt);
  seq.table.blocks.reserve(static_cast<size_t>(need));
  const PrefixMatch match = find_cached_prefix(pool_, seq);  // appends the blocks found
  if (prefix_being_computed(pool_, seq, match.blocks, running_)) {
    seq.table.blocks.clear();
    return Admit::kWaitForPrefix;
  }
  if (need - match.blocks + match.reclaimable > pool_.free_blocks()) {
    seq.table.blocks.clear();
    return Admit::kNoRoom;
  }
  for (int32_t b : seq.table.blocks) pool_.acquire(b);
  for (int64_t i = match.blocks; i < need; ++i) seq.table.blocks.push_back(*pool_.allocate());
  seq.cached_tokens = match.blocks * bt;
  seq.kv_len = seq.cached_tokens;
  seq.published_blocks = match.blocks;
  if (pool_.prefix_caching()) {
    prefix_queried_tokens_ += seq.prompt_len;
    prefix_hit_tokens_ += seq.cached_tokens;
  }
  return Admit::kAdmitted;
}

// FIFO with bounded overtaking: a head that does not fit may be passed by
// smaller sequences for max_skips rounds, then nothing passes it until it fits
// (it always fits eventually: submit() refuses what exceeds the whole pool).
// A sequence whose next prompt block a running one is computing waits for it
// (it will find it cached) without blocking the line.
void Scheduler::admit() {
  Sequence* blocked_head = nullptr;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (static_cast<int64_t>(running_.size()) >= limits_.step_seqs) break;
    Sequence& seq = **it;
    if (blocked_head && blocked_head->skipped_steps >= limits_.max_skips) break;
    const Admit result = try_admit(seq);
    if (result == Admit::kAdmitted) {
      if (blocked_head) ++blocked_head->skipped_steps;
      running_.push_back(std::move(*it));
      it = waiting_.erase(it);
      continue;
    }
    if (result == Admit::kNoRoom && !blocked_head) blocked_head = &seq;
    ++it;
  }
}

void Scheduler::add_decodes(StepPlan& plan, int64_t& budget) {
  for (auto& s : running_) {
    if (budget <= 0 || static_cast<int64_t>(plan.steps.size()) >= limits_.step_seqs) return;
    if (s->prefilling() || s->finish) continue;
    plan.steps.push_back({std::span(s->tokens).subspan(static_cast<size_t>(s->kv_len), 1), s->kv_len, &s->table, true});
    plan.owners.push_back(s.get());
    --budget;
  }
}

void Scheduler::add_prefills(StepPlan& plan, int64_t& budget) {
  for (auto& s : running_) {
    if (budget <= 0 || static_cast<int64_t>(plan.steps.size()) >= limits_.step_seqs) return;
    if (!s->prefilling()) continue;
    const int64_t n = std::min(budget, s->prompt_len - s->kv_len);
    plan.steps.push_back({std::span(s->tokens).subspan(static_cast<size_t>(s->kv_len), static_cast<size_t>(n)),
                          s->kv_len, &s->table, s->kv_len + n == s->prompt_len, s->request.prompt_details});
    plan.owners.push_back(s.get());
    plan.wants_rows = plan.wants_rows || s->request.prompt_details;
    if (!s->started_at) s->started_at = Clock::now();
    budget -= n;
  }
}

StepPlan Scheduler::schedule() {
  inject_fault(FaultSite::kSchedule);
  feed_waiting();
  admit();
  StepPlan plan;
  int64_t budget = limits_.step_tokens;
  add_decodes(plan, budget);
  add_prefills(plan, budget);
  last_batch_size_ = static_cast<int64_t>(plan.steps.size());
  last_batch_tokens_ = limits_.step_tokens - budget;
  return plan;
}

void Scheduler::record_prompt_row(Sequence& seq, int64_t pos, std::span<const float> logits) {
  const int64_t next = pos + 1;  // the row at pos predicts the prompt token at pos + 1
  if (next >= seq.prompt_len || static_cast<int64_t>(seq.prefill.size()) != next) return;
  const int32_t id = seq.tokens[static_cast<size_t>(next)];
  const int32_t top_n = seq.request.prompt_top_n;
  const float logprob = raw_logprobs(logits, id, top_n, scratch_.order, &alternatives_);
  seq.prefill.push_back({id, logprob, tokenizer_.piece_string(seq.tokens[static_cast<size_t>(pos)], id),
                         tokenizer_.is_special(id)});
  if (top_n > 0) {
    seq.prefill_top.emplace_back();
    to_token_infos(alternatives_, tokenizer_, seq.prefill_top.back());
  }
}

void Scheduler::emit_token(Sequence& seq, const SampledToken& token) {
  TokenEvent ev;
  ev.index = seq.index;
  const int32_t prev_id = seq.tokens[seq.tokens.size() - 2];  // the token is already appended
  ev.token = {token.id, token.logprob, tokenizer_.piece_string(prev_id, token.id),
              tokenizer_.is_special(token.id)};
  seq.logprob_sum += token.logprob;
  if (!seq.prefill.empty()) {  // the first event carries the prompt's records (moved: sent once)
    ev.prefill = std::move(seq.prefill);
    ev.prefill_top = std::move(seq.prefill_top);
    seq.prefill.clear();
    seq.prefill_top.clear();
  }
  const bool eos_id = token.id == tokenizer_.eos_id() ||
                      std::find(limits_.extra_eos_ids.begin(), limits_.extra_eos_ids.end(), token.id) !=
                          limits_.extra_eos_ids.end();
  const bool eos = eos_id && (!seq.request.params.ignore_eos || seq.grammar.finished());
  if (!eos) {
    ev.text = seq.decoder.push(token.id);
    if (seq.stops.push(ev.text)) seq.finish = FinishReason::kStopSequence;
  } else {
    seq.finish = FinishReason::kEosToken;
  }
  if (!seq.finish && seq.generated() >= seq.request.params.max_new_tokens) seq.finish = FinishReason::kLength;
  if (seq.request.top_n_tokens > 0) to_token_infos(alternatives_, tokenizer_, ev.top_tokens);
  if (seq.finish) {
    if (*seq.finish != FinishReason::kStopSequence) {
      const std::string tail = seq.decoder.finish();
      ev.text += tail;
      seq.stops.push(tail);
    } else {
      ev.stop_offset = static_cast<int64_t>(seq.stops.match_begin());
    }
    ev.finish_reason = *seq.finish;
    ev.generated_tokens = seq.generated();
    ev.input_tokens = seq.prompt_len;
    ev.seed = seq.sampler.seed();
    ev.generated_text = seq.stops.text();
    ev.logprob_sum = seq.logprob_sum;
    const Clock::time_point now = Clock::now();
    const Clock::time_point started = seq.started_at.value_or(now);
    ev.queue_seconds = std::chrono::duration<double>(started - seq.queued_at).count();
    ev.inference_seconds = std::chrono::duration<double>(now - started).count();
  }
  if (seq.finish) {
    release(seq);  // blocks are back before the client hears it is done
    ev.final = true;
    seq.final_sent = true;  // even if the sink throws: no second final event
  }
  seq.owner->sink(std::move(ev));
}

void Scheduler::update(const StepPlan& plan, std::span<const float> logits, int64_t vocab_size) {
  size_t row = 0;
  logits_copy_.resize(static_cast<size_t>(vocab_size));
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Sequence& seq = *plan.owners[i];
    seq.kv_len += static_cast<int64_t>(plan.steps[i].tokens.size());
    publish_written_blocks(pool_, seq);  // before sampling: a finished sequence's blocks stay cached
    if (!plan.steps[i].want_logits) continue;
    const std::span<const float> l = logits.subspan(row++ * static_cast<size_t>(vocab_size), static_cast<size_t>(vocab_size));
    try {
      sample_and_emit(seq, l);
    } catch (...) {  // contained: only this sequence ends
      ++faults_;
      const std::string what = describe_current_exception();
      spdlog::error("engine fault sampling or detokenizing request {} item {}: {}; that sequence ends with an error",
                    seq.owner->ticket, seq.index, what);
      fail(seq, fault_error(what));
    }
  }
  remove_finished();
}

void Scheduler::sample_and_emit(Sequence& seq, std::span<const float> logits) {
  inject_fault(FaultSite::kSample, seq.owner->ticket);
  std::copy(logits.begin(), logits.end(), logits_copy_.begin());
  const int32_t top_n = seq.request.top_n_tokens;
  const bool raw = seq.request.raw_logprobs, needed = seq.request.logprobs_needed;
  if (seq.grammar.active()) constrain(seq);
  SampledToken token = seq.sampler.sample(logits_copy_, scratch_, raw ? 0 : top_n, &alternatives_, needed && !raw);
  if (raw && needed) token.logprob = raw_logprobs(logits, token.id, top_n, scratch_.order, &alternatives_);
  seq.sampler.accept(token.id);
  if (seq.grammar.active()) seq.grammar.advance(token.id, *trie_);
  seq.tokens.push_back(token.id);  // reserved to the full length: does not allocate
  emit_token(seq, token);
}

// Masks logits_copy_ to the tokens the sequence's grammar allows. When the
// vocabulary cannot spell what the grammar needs, only the end token is left.
void Scheduler::constrain(Sequence& seq) {
  const int64_t left = seq.request.params.max_new_tokens - seq.generated();
  if (seq.grammar.mask(logits_copy_, *trie_, left, end_ids_, grammar_scratch_)) return;
  spdlog::warn("request {} item {}: no token can continue its grammar; ending it", seq.owner->ticket, seq.index);
  const float end_logit = 0.0f;
  std::fill(logits_copy_.begin(), logits_copy_.end(), -std::numeric_limits<float>::infinity());
  if (tokenizer_.eos_id() >= 0) logits_copy_[static_cast<size_t>(tokenizer_.eos_id())] = end_logit;
}

void Scheduler::fail(Sequence& seq, const Error& error) {
  release(seq);
  if (seq.final_sent) return;
  seq.final_sent = true;
  send_error_final(*seq.owner, seq.index, error);
}

void Scheduler::fail_step(const StepPlan& plan, const Error& error) {
  ++faults_;
  if (plan.empty()) {
    abort_all(error);
    return;
  }
  for (Sequence* seq : plan.owners) fail(*seq, error);
  remove_finished();
}

// Last block first: the prefix cache evicts a sequence's tail before its head.
void Scheduler::release(Sequence& seq) {
  for (auto it = seq.table.blocks.rbegin(); it != seq.table.blocks.rend(); ++it) pool_.release(*it);
  seq.table.blocks.clear();
}

void Scheduler::finish_submission_item(Submission& sub) {
  if (sub.unfinished > 0) --sub.unfinished;
}

void Scheduler::remove_finished() {
  for (auto it = running_.begin(); it != running_.end();) {
    if ((*it)->final_sent) {
      finish_submission_item(*(*it)->owner);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  submissions_.remove_if([](const std::unique_ptr<Submission>& s) { return s->unfinished == 0; });
}

void Scheduler::cancel(uint64_t ticket) {
  auto drop = [&](auto& seqs) {
    for (auto it = seqs.begin(); it != seqs.end();) {
      if ((*it)->owner->ticket == ticket) {
        release(**it);
        it = seqs.erase(it);
      } else {
        ++it;
      }
    }
  };
  drop(running_);
  drop(waiting_);
  submissions_.remove_if([&](const std::unique_ptr<Submission>& s) { return s->ticket == ticket; });
}

void Scheduler::abort_all(const Error& error) {
  for (auto& s : running_) fail(*s, error);
  for (auto& s : waiting_) send_error_final(*s->owner, s->index, error);
  for (auto& sub : submissions_) {
    for (size_t i = 0; i < sub->pending.size(); ++i) send_error_final(*sub, sub->next_index + i, error);
  }
  running_.clear();
  waiting_.clear();
  submissions_.clear();
}

}  // namespace plimsoll::sched
