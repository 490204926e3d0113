// Scheduling policy: feed, start (reserve to completion), build the step
// (decode-first, chunked prefill), record what it wrote, deliver its events
// and free the finished.
#include "sched/scheduler.h"

#include <algorithm>
#include <tuple>
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
    : limits_(std::move(limits)), pool_(pool), tokenizer_(tokenizer) {
  limits_.tenants = with_default_tenant(std::move(limits_.tenants));
  use_.resize(limits_.tenants.size());
  for (const TenantLimits& t : limits_.tenants) cap_blocks_.push_back(tenant_cap_blocks(t, pool_.n_blocks()));
}

void Scheduler::add(std::unique_ptr<Submission> submission) {
  submission->unfinished = submission->pending.size();
  const int32_t t = submission->pending.empty() ? 0 : submission->pending.front().tenant;
  submission->tenant = t >= 0 && static_cast<size_t>(t) < limits_.tenants.size() ? t : 0;
  // One tenant alone (no tenants file) keeps the unsalted keys.
  const bool shared = limits_.prefix_cache_across_tenants || limits_.tenants.size() == 1;
  submission->prefix_salt = shared ? 0 : submission->tenant + 1;
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

// Counts each tenant's and submission's sequences waiting and running, and the
// blocks the running hold.
void Scheduler::count_use() {
  for (TenantUse& u : use_) u = TenantUse{0, 0, 0, u.served_tokens, u.preemptions};
  for (auto& sub : submissions_) sub->waiting = sub->running = 0;
  for (const auto& s : waiting_) {
    ++s->owner->waiting;
    ++use_[static_cast<size_t>(s->owner->tenant)].waiting;
  }
  for (const auto& s : running_) {
    TenantUse& u = use_[static_cast<size_t>(s->owner->tenant)];
    ++s->owner->running;
    ++u.running;
    u.kv_blocks += static_cast<int64_t>(s->table.blocks.size());
  }
}

// Turns pending items into waiting sequences: first one for every submission
// that has none in line (a new client never queues behind another's list),
// then round-robin over each tenant's submissions, keeping its waiting line
// short (what cannot run soon stays compact).
void Scheduler::feed_waiting() {
  count_use();
  const auto feed_one = [&](Submission& sub) {
    GenerationRequest req = std::move(sub.pending.front());
    sub.pending.pop_front();  // O(1): a client batch of any length is fed in linearly
    const size_t index = sub.next_index++;
    try {
      inject_fault(FaultSite::kQueueItem, sub.ticket);
      waiting_.push_back(std::make_unique<Sequence>(&sub, index, std::move(req), tokenizer_));
      waiting_.back()->queued_at = sub.submitted_at;
      ++sub.waiting;
      ++use_[static_cast<size_t>(sub.tenant)].waiting;
    } catch (...) {
      fail_item(sub, index, describe_current_exception());
    }
  };
  for (auto& sub : submissions_) {
    if (!sub->pending.empty() && sub->waiting == 0) feed_one(*sub);
  }
  // Each tenant's line holds up to 2 x step_seqs (what it could start, and
  // more to overtake a head that does not fit), so a tenant served faster
  // than another never runs out of candidates while the other's line is full.
  const int64_t target = 2 * limits_.step_seqs;
  bool moved = true;
  while (moved) {
    moved = false;
    for (auto& sub : submissions_) {
      if (sub->pending.empty() || use_[static_cast<size_t>(sub->tenant)].waiting >= target) continue;
      feed_one(*sub);
      moved = true;
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

// Whether the tenant's caps leave no room for another sequence of `blocks`.
bool Scheduler::at_cap(int32_t tenant) const {
  const TenantLimits& l = limits_.tenants[static_cast<size_t>(tenant)];
  const TenantUse& u = use_[static_cast<size_t>(tenant)];
  return (l.max_sequences > 0 && u.running >= l.max_sequences) ||
         (cap_blocks_[static_cast<size_t>(tenant)] > 0 && u.kv_blocks >= cap_blocks_[static_cast<size_t>(tenant)]);
}

// The waiting sequence to try next: of the tenants under their caps, the one
// holding the least of the KV pool for its weight (then the fewest running
// sequences for its weight); of its sequences, the lowest `priority`, then the
// one whose submission runs the fewest; then the longest waiting. `passed`: waiting_ entries tried
// already. Returns its index, waiting_.size() when none is left.
size_t Scheduler::next_to_start(const std::vector<char>& passed) const {
  size_t best_at = waiting_.size();
  const Sequence* best = nullptr;
  double best_blocks = 0, best_running = 0;
  int64_t best_sub = 0;
  int32_t best_priority = 0;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    if (passed[i]) continue;
    const Sequence* seq = waiting_[i].get();
    const int32_t t = seq->owner->tenant;
    if (at_cap(t)) continue;
    const double w = limits_.tenants[static_cast<size_t>(t)].weight;
    const double blocks = static_cast<double>(use_[static_cast<size_t>(t)].kv_blocks) / w;
    const double running = static_cast<double>(use_[static_cast<size_t>(t)].running) / w;
    const int64_t sub = seq->owner->running;
    const int32_t priority = seq->request.priority;
    const auto key = std::make_tuple(blocks, running, priority, sub);
    if (!best || key < std::make_tuple(best_blocks, best_running, best_priority, best_sub)) {
      best = seq;
      best_at = i;
      best_blocks = blocks;
      best_running = running;
      best_priority = priority;
      best_sub = sub;
    }
  }
  return best_at;
}

// Makes room and a slot for seq: where its tenant holds less than its fair
// share (the pool's blocks and the step's sequence slots, split by weight
// between the tenants with work), by preempting the newest sequences of the
// tenants most over theirs; else (or when none is over) its tenant's own
// running sequences of a higher `priority` value give way, newest of the
// highest first. False when nothing can be taken back.
bool Scheduler::make_room_for(const Sequence& seq, std::vector<char>& passed) {
  const auto t = static_cast<size_t>(seq.owner->tenant);
  double active_weight = 0;
  for (size_t u = 0; u < use_.size(); ++u) {
    if (u == t || use_[u].waiting > 0 || use_[u].running > 0) active_weight += limits_.tenants[u].weight;
  }
  const auto fair = [&](size_t u, int64_t total) {
    return static_cast<double>(total) * limits_.tenants[u].weight / active_weight;
  };
  const int64_t need = blocks_for_tokens(seq.total_tokens(), pool_.block_tokens());
  const auto n_blocks = pool_.n_blocks();
  const auto room = [&] {
    return pool_.free_blocks() >= need && static_cast<int64_t>(running_.size()) < limits_.step_seqs;
  };
  const bool owed = static_cast<double>(use_[t].kv_blocks + need) <= fair(t, n_blocks) + 1e-9 &&
                    static_cast<double>(use_[t].running + 1) <= std::max(1.0, fair(t, limits_.step_seqs)) + 1e-9;
  // The newest running sequence of the tenant most over its share (owed), else the
  // tenant's own newest of the highest `priority` value above seq's; none: running_.size().
  const auto victim = [&]() -> size_t {
    size_t over = use_.size();
    double most = 0;
    for (size_t u = 0; owed && u < use_.size(); ++u) {
      if (u == t || use_[u].running == 0) continue;
      const bool above = static_cast<double>(use_[u].kv_blocks) > fair(u, n_blocks) ||
                         static_cast<double>(use_[u].running) > fair(u, limits_.step_seqs);
      const double held = static_cast<double>(use_[u].kv_blocks) / limits_.tenants[u].weight;
      if (above && (over == use_.size() || held > most)) {
        over = u;
        most = held;
      }
    }
    size_t found = running_.size();
    for (size_t i = running_.size(); i-- > 0;) {
      const Sequence& r = *running_[i];
      const auto u = static_cast<size_t>(r.owner->tenant);
      if (over < use_.size()) {
        if (u == over) return i;
      } else if (u == t && r.request.priority > seq.request.priority &&
                 (found == running_.size() || r.request.priority > running_[found]->request.priority)) {
        found = i;
      }
    }
    return found;
  };
  while (!room()) {
    const size_t i = victim();
    if (i == running_.size()) return false;
    preempt(i, passed);
  }
  return true;
}

// Gives the sequence's blocks back and puts it in line again: a restart
// computes the K/V of every token but its last, then decodes on.
void Scheduler::preempt(size_t running_index, std::vector<char>& passed) {
  std::unique_ptr<Sequence> seq = std::move(running_[running_index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_index));
  TenantUse& u = use_[static_cast<size_t>(seq->owner->tenant)];
  u.kv_blocks -= static_cast<int64_t>(seq->table.blocks.size());
  --u.running;
  ++u.waiting;
  ++u.preemptions;
  --seq->owner->running;
  ++seq->owner->waiting;
  release(*seq);
  seq->kv_len = 0;
  seq->cached_tokens = 0;
  seq->published_blocks = 0;
  seq->prefill_end = std::max<int64_t>(seq->prompt_len, static_cast<int64_t>(seq->tokens.size()) - 1);
  seq->skipped_steps = 0;
  seq->requeued = true;
  ++preemptions_;
  waiting_.push_back(std::move(seq));
  passed.push_back(1);  // not started again in the step that preempted it
}

// Weighted fair share with bounded overtaking: sequences start in
// next_to_start()'s order; one that does not fit may first take back its
// tenant's fair share from tenants over theirs (make_room_for), else be
// passed by others for max_skips starts, then nothing passes it until it fits
// (it always fits eventually: submit() refuses what exceeds the whole pool). A
// sequence whose next prompt block a running one is computing waits for it
// (it will find it cached) without blocking the line. A tenant at its cap is
// passed over. Preempted sequences go to the front of the line.
void Scheduler::start_waiting() {
  std::vector<char> passed(waiting_.size(), 0);
  Sequence* blocked_head = nullptr;
  bool moved = false;
  for (;;) {
    if (blocked_head && blocked_head->skipped_steps >= limits_.max_skips) break;
    const size_t at = next_to_start(passed);
    if (at == waiting_.size()) break;
    passed[at] = 1;
    Sequence* seq = waiting_[at].get();
    const int64_t cap = cap_blocks_[static_cast<size_t>(seq->owner->tenant)];
    if (cap > 0 && use_[static_cast<size_t>(seq->owner->tenant)].kv_blocks +
                           blocks_for_tokens(seq->total_tokens(), pool_.block_tokens()) > cap) {
      continue;  // over its tenant's share of the pool: waits for its own blocks to come back
    }
    const bool slot = static_cast<int64_t>(running_.size()) < limits_.step_seqs;
    Start result = slot ? try_start(*seq) : Start::kNoRoom;
    if (result == Start::kNoRoom && make_room_for(*seq, passed)) {
      moved = true;
      result = try_start(*seq);
    }
    if (result == Start::kStarted) {
      if (blocked_head) ++blocked_head->skipped_steps;
      TenantUse& u = use_[static_cast<size_t>(seq->owner->tenant)];
      ++u.running;
      --u.waiting;
      u.kv_blocks += static_cast<int64_t>(seq->table.blocks.size());
      ++seq->owner->running;
      --seq->owner->waiting;
      seq->requeued = false;
      running_.push_back(std::move(waiting_[at]));
      moved = true;
      continue;
    }
    if (!slot && !blocked_head) break;  // no slot and none to take back: nothing else starts either
    if (result == Start::kNoRoom && !blocked_head) blocked_head = seq;
  }
  if (moved) {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), nullptr), waiting_.end());
    std::stable_partition(waiting_.begin(), waiting_.end(), [](const auto& s) { return s->requeued; });
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

// Prefill chunks under the step's token budget, shared across tenants: each
// next chunk goes to the prefilling sequence whose tenant has had the fewest
// of this step's tokens for its weight (running order among equals).
void Scheduler::add_prefills(StepPlan& plan, int64_t& budget) {
  std::vector<Sequence*> prefilling;
  for (auto& s : running_) {
    if (s->prefilling()) prefilling.push_back(s.get());
  }
  std::vector<int64_t> step_tokens(limits_.tenants.size(), 0);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    step_tokens[static_cast<size_t>(plan.owners[i]->owner->tenant)] += static_cast<int64_t>(plan.steps[i].tokens.size());
  }
  while (budget > 0 && static_cast<int64_t>(plan.steps.size()) < limits_.step_seqs && !prefilling.empty()) {
    const auto share = [&](const Sequence* s) {
      const auto t = static_cast<size_t>(s->owner->tenant);
      return static_cast<double>(step_tokens[t]) / limits_.tenants[t].weight;
    };
    const auto next = std::min_element(prefilling.begin(), prefilling.end(),
                                       [&](const Sequence* a, const Sequence* b) { return share(a) < share(b); });
    Sequence* s = *next;
    prefilling.erase(next);
    // A restart after a preemption recomputes K/V only: its logits were used the first time.
    const bool first_time = s->generated() == 0;
    const int64_t n = std::min(budget, s->prefill_end - s->kv_len);
    plan.steps.push_back({std::span(s->tokens).subspan(static_cast<size_t>(s->kv_len), static_cast<size_t>(n)),
                          s->kv_len, &s->table, first_time && s->kv_len + n == s->prefill_end,
                          first_time && s->request.prompt_details});
    plan.owners.push_back(s);
    plan.wants_rows = plan.wants_rows || (first_time && s->request.prompt_details);
    if (!s->started_at) s->started_at = Clock::now();
    step_tokens[static_cast<size_t>(s->owner->tenant)] += n;
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
    use_[static_cast<size_t>(seq.owner->tenant)].served_tokens += static_cast<int64_t>(plan.steps[i].tokens.size());
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
