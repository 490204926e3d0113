// Scheduling policy: feed, start (reserve to completion), build the step
// (decode-first, chunked prefill), record what it wrote, deliver its events
// and free the finished.
#include "sched/scheduler.h"

#include <algorithm>
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

}  // namespace

Scheduler::Scheduler(SchedulerLimits limits, KvBlockPool& pool, const TextTokenizer& tokenizer)
    : limits_(limits), pool_(pool), tokenizer_(tokenizer) {}

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
        inject_fault(FaultSite::kQueueItem, sub->ticket);
        waiting_.push_back(std::make_unique<Sequence>(sub.get(), index, std::move(req), tokenizer_));
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
Scheduler::Start Scheduler::try_start(Sequence& seq) {
  const int64_t bt = pool_.block_tokens();
  const int64_t need = blocks_for_tokens(seq.total_tokens(), bt);
  seq.table.blocks.reserve(static_cast<size_t>(need));
  const PrefixMatch match = find_cached_prefix(pool_, seq);  // appends the blocks found
  if (prefix_being_computed(pool_, seq, match.blocks, running_)) {
    seq.table.blocks.clear();
    return Start::kWaitForPrefix;
  }
  if (need - match.blocks + match.reclaimable > pool_.free_blocks()) {
    seq.table.blocks.clear();
    return Start::kNoRoom;
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
  return Start::kStarted;
}

// FIFO with bounded overtaking: a head that does not fit may be passed by
// smaller sequences for max_skips rounds, then nothing passes it until it fits
// (it always fits eventually: submit() refuses what exceeds the whole pool).
// A sequence whose next prompt block a running one is computing waits for it
// (it will find it cached) without blocking the line.
void Scheduler::start_waiting() {
  Sequence* blocked_head = nullptr;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (static_cast<int64_t>(running_.size()) >= limits_.step_seqs) break;
    Sequence& seq = **it;
    if (blocked_head && blocked_head->skipped_steps >= limits_.max_skips) break;
    const Start result = try_start(seq);
    if (result == Start::kStarted) {
      if (blocked_head) ++blocked_head->skipped_steps;
      running_.push_back(std::move(*it));
      it = waiting_.erase(it);
      continue;
    }
    if (result == Start::kNoRoom && !blocked_head) blocked_head = &seq;
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
  start_waiting();
  StepPlan plan;
  int64_t budget = limits_.step_tokens;
  add_decodes(plan, budget);
  add_prefills(plan, budget);
  last_batch_size_ = static_cast<int64_t>(plan.steps.size());
  last_batch_tokens_ = limits_.step_tokens - budget;
  return plan;
}

void Scheduler::record_written(const StepPlan& plan) {
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Sequence& seq = *plan.owners[i];
    seq.kv_len += static_cast<int64_t>(plan.steps[i].tokens.size());
    publish_written_blocks(pool_, seq);  // before any release: a finished sequence's blocks stay cached
  }
}

void Scheduler::deliver(StepOutputs& outputs) {
  for (SequenceOutput& out : outputs.outputs) {
    if (out.fault) {  // the output processor logged it
      ++faults_;
      fail(*out.seq, *out.fault);
    } else {
      send(*out.seq, std::move(out.event));
    }
  }
  remove_finished();
}

// A final event goes out after the sequence's blocks are back. A sink that
// throws ends the sequence with an error event (none after a final one).
void Scheduler::send(Sequence& seq, TokenEvent&& event) {
  if (event.final) {
    release(seq);  // blocks are back before the client hears it is done
    seq.final_sent = true;  // even if the sink throws: no second final event
  }
  try {
    seq.owner->sink(std::move(event));
  } catch (...) {  // contained: only this sequence ends
    ++faults_;
    const std::string what = describe_current_exception();
    spdlog::error("engine fault handing an event of request {} item {} to its stream: {}; that sequence ends "
                  "with an error", seq.owner->ticket, seq.index, what);
    fail(seq, fault_error(what));
  }
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
