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
  service_.assign(limits_.tenants.size(), 0.0);
  active_.assign(limits_.tenants.size(), 0);
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
// blocks they hold (running, or preempted with their blocks kept); then lifts
// the service of each tenant that has work again (lift_returning).
void Scheduler::count_use() {
  for (TenantUse& u : use_) u = TenantUse{0, 0, 0, u.served_tokens, u.preemptions};
  for (auto& sub : submissions_) sub->waiting = sub->running = 0;
  for (const auto& s : waiting_) {
    TenantUse& u = use_[static_cast<size_t>(s->owner->tenant)];
    ++s->owner->waiting;
    ++u.waiting;
    u.kv_blocks += static_cast<int64_t>(s->table.blocks.size());
  }
  for (const auto& s : running_) {
    TenantUse& u = use_[static_cast<size_t>(s->owner->tenant)];
    ++s->owner->running;
    ++u.running;
    u.kv_blocks += static_cast<int64_t>(s->table.blocks.size());
  }
  lift_returning();
}

// A tenant that had no work and has some again starts from the least service
// (tokens per weight) of the tenants that kept working, not from its own old
// figure: being idle earns no credit (the virtual token counter of Sheng et
// al., "Fairness in Serving Large Language Models", OSDI 2024).
void Scheduler::lift_returning() {
  std::vector<char> now(use_.size(), 0);
  for (size_t t = 0; t < use_.size(); ++t) now[t] = use_[t].waiting > 0 || use_[t].running > 0;
  for (const auto& sub : submissions_) {
    if (!sub->pending.empty()) now[static_cast<size_t>(sub->tenant)] = 1;
  }
  double least = -1;
  for (size_t t = 0; t < use_.size(); ++t) {
    if (active_[t] && now[t] && (least < 0 || service_[t] < least)) least = service_[t];
  }
  for (size_t t = 0; t < use_.size(); ++t) {
    if (now[t] && !active_[t] && least >= 0) service_[t] = std::max(service_[t], least);
  }
  active_ = std::move(now);
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
  if (seq.holds_blocks()) return Start::kStarted;  // preempted with its blocks: resumes
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

// Whether its tenant's caps leave no room to start seq: a slot more, and the
// blocks it needs beyond those it holds (after a preemption that kept them).
bool Scheduler::at_cap(const Sequence& seq) const {
  const auto t = static_cast<size_t>(seq.owner->tenant);
  const TenantLimits& l = limits_.tenants[t];
  const TenantUse& u = use_[t];
  const int64_t more_blocks =
      blocks_for_tokens(seq.total_tokens(), pool_.block_tokens()) - static_cast<int64_t>(seq.table.blocks.size());
  return (l.max_sequences > 0 && u.running >= l.max_sequences) ||
         (cap_blocks_[t] > 0 && u.kv_blocks + more_blocks > cap_blocks_[t]);
}

// The waiting sequence to try next: of the tenants under their caps, the one
// served the fewest tokens for its weight (then holding the least of the KV
// pool for its weight, then the fewest running sequences for it); of its
// sequences, the lowest `priority`, then the one whose submission runs the
// fewest; then the longest waiting. `passed`: waiting_ entries tried already.
// Returns its index, waiting_.size() when none is left.
size_t Scheduler::next_to_start(const std::vector<char>& passed) const {
  using Key = std::tuple<double, double, double, int32_t, int64_t>;
  size_t best_at = waiting_.size();
  Key best{};
  for (size_t i = 0; i < waiting_.size(); ++i) {
    if (passed[i]) continue;
    const Sequence* seq = waiting_[i].get();
    const auto t = static_cast<size_t>(seq->owner->tenant);
    if (at_cap(*seq)) continue;
    const double w = limits_.tenants[t].weight;
    const Key key{service_[t], static_cast<double>(use_[t].kv_blocks) / w, static_cast<double>(use_[t].running) / w,
                  seq->request.priority, seq->owner->running};
    if (best_at == waiting_.size() || key < best) {
      best_at = i;
      best = key;
    }
  }
  return best_at;
}

// Makes room and a slot for seq. Where its tenant holds less than its fair
// share (the pool's blocks and the step's sequence slots, split by weight
// between the tenants with work), the tenant most over its share among those
// served as many tokens for their weight or more gives way; else (or when none
// is over) its tenant's own sequences of a higher `priority` value, the highest
// first. Newest first. A victim keeps its blocks while the pool has room for
// seq without them (only a slot was short); blocks short, victims waiting with
// kept blocks give them back first. False when nothing can be taken back.
bool Scheduler::make_room_for(const Sequence& seq, std::vector<char>& passed) {
  const auto t = static_cast<size_t>(seq.owner->tenant);
  double active_weight = 0;
  for (size_t u = 0; u < use_.size(); ++u) {
    if (u == t || use_[u].waiting > 0 || use_[u].running > 0) active_weight += limits_.tenants[u].weight;
  }
  const auto fair = [&](size_t u, int64_t total) {
    return static_cast<double>(total) * limits_.tenants[u].weight / active_weight;
  };
  const int64_t need =
      blocks_for_tokens(seq.total_tokens(), pool_.block_tokens()) - static_cast<int64_t>(seq.table.blocks.size());
  const bool owed = static_cast<double>(use_[t].kv_blocks + need) <= fair(t, pool_.n_blocks()) + 1e-9 &&
                    static_cast<double>(use_[t].running + 1) <= std::max(1.0, fair(t, limits_.step_seqs)) + 1e-9;
  // The tenant that gives way when seq's is owed: the most over its share,
  // holding blocks (kept = false: running sequences); none: use_.size().
  const auto most_over = [&](bool kept) {
    size_t over = use_.size();
    double most = 0;
    for (size_t u = 0; owed && u < use_.size(); ++u) {
      if (u == t || (kept ? use_[u].kv_blocks : use_[u].running) == 0 || service_[u] < service_[t]) continue;
      const bool above = static_cast<double>(use_[u].kv_blocks) > fair(u, pool_.n_blocks()) ||
                         static_cast<double>(use_[u].running) > fair(u, limits_.step_seqs);
      const double held = static_cast<double>(use_[u].kv_blocks) / limits_.tenants[u].weight;
      if (above && (over == use_.size() || held > most)) {
        over = u;
        most = held;
      }
    }
    return over;
  };
  // Of `seqs` (newest last; empty entries skipped), the newest of the highest
  // `priority` value that gives way to seq; seqs.size(): none.
  const auto victim_in = [&](const auto& seqs, bool kept) {
    const size_t over = most_over(kept);
    const auto gives_way = [&](const Sequence& r) {
      const auto u = static_cast<size_t>(r.owner->tenant);
      if (kept && !r.holds_blocks()) return false;
      return over < use_.size() ? u == over : u == t && r.request.priority > seq.request.priority;
    };
    size_t found = seqs.size();
    for (size_t i = seqs.size(); i-- > 0;) {
      if (!seqs[i] || !gives_way(*seqs[i])) continue;
      if (found == seqs.size() || seqs[i]->request.priority > seqs[found]->request.priority) found = i;
    }
    return found;
  };
  for (;;) {
    const bool blocks_short = pool_.free_blocks() < need;
    if (!blocks_short && static_cast<int64_t>(running_.size()) < limits_.step_seqs) return true;
    if (blocks_short) {
      if (const size_t kept = victim_in(waiting_, true); kept < waiting_.size()) {
        use_[static_cast<size_t>(waiting_[kept]->owner->tenant)].kv_blocks -=
            static_cast<int64_t>(waiting_[kept]->table.blocks.size());
        drop_blocks(*waiting_[kept]);
        continue;
      }
    }
    const size_t i = victim_in(running_, false);
    if (i == running_.size()) return false;
    preempt(i, passed, /*keep_blocks=*/!blocks_short);
  }
}

// Gives the sequence's blocks back: a restart computes the K/V of every token
// but its last, then decodes on.
void Scheduler::drop_blocks(Sequence& seq) {
  release(seq);
  seq.kv_len = 0;
  seq.cached_tokens = 0;
  seq.published_blocks = 0;
  seq.prefill_end = std::max<int64_t>(seq.prompt_len, static_cast<int64_t>(seq.tokens.size()) - 1);
}

// Puts a running sequence in line again (at the front: requeued), with its
// blocks (it resumes where it stopped) or without (drop_blocks).
void Scheduler::preempt(size_t running_index, std::vector<char>& passed, bool keep_blocks) {
  std::unique_ptr<Sequence> seq = std::move(running_[running_index]);
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(running_index));
  TenantUse& u = use_[static_cast<size_t>(seq->owner->tenant)];
  --u.running;
  ++u.waiting;
  ++u.preemptions;
  --seq->owner->running;
  ++seq->owner->waiting;
  if (!keep_blocks) {
    u.kv_blocks -= static_cast<int64_t>(seq->table.blocks.size());
    drop_blocks(*seq);
  }
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
    const auto held = static_cast<int64_t>(seq->table.blocks.size());
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
      u.kv_blocks += static_cast<int64_t>(seq->table.blocks.size()) - held;
      ++seq->owner->running;
      --seq->owner->waiting;
      seq->requeued = false;
      charge(*seq, seq->prefill_end);  // the prompt it will compute, charged now: the next start sees it
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

// Charges the tokens of seq below `end` not charged before, from its K/V on,
// to its tenant's service.
void Scheduler::charge(Sequence& seq, int64_t end) {
  const int64_t from = std::max(seq.kv_len, seq.charged_len);
  if (end <= from) return;
  const auto t = static_cast<size_t>(seq.owner->tenant);
  service_[t] += static_cast<double>(end - from) / limits_.tenants[t].weight;
  seq.charged_len = end;
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
    const int64_t from = std::max(seq.kv_len, seq.served_len);
    const int64_t to = seq.kv_len + static_cast<int64_t>(plan.steps[i].tokens.size());
    recomputed_tokens_ += std::min(from, to) - seq.kv_len;  // what a restart computes again is not served anew
    if (to > from) {
      use_[static_cast<size_t>(seq.owner->tenant)].served_tokens += to - from;
      seq.served_len = to;
    }
    charge(seq, to);
    seq.kv_len = to;
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
  for (auto& s : waiting_) {
    release(*s);  // blocks kept through a preemption
    send_error_final(*s->owner, s->index, error);
  }
  for (auto& sub : submissions_) {
    for (size_t i = 0; i < sub->pending.size(); ++i) send_error_final(*sub, sub->next_index + i, error);
  }
  running_.clear();
  waiting_.clear();
  submissions_.clear();
}

}  // namespace plimsoll::sched
