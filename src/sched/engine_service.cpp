// The engine thread: drain the inbox, schedule, step, process the outputs,
// deliver them; admission checks and load figures for the HTTP side.
#include "sched/engine_service.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <spdlog/spdlog.h>

#include "core/bytes.h"

namespace plimsoll::sched {
namespace {

Rejection reject(ErrorCode code, std::string message, double retry_after = 0) {
  return Rejection{Error{code, std::move(message)}, retry_after};
}

AdmissionLimits admission_limits(const EngineServiceConfig& c, const KvBlockPool& pool, const TextTokenizer& tok,
                                 std::function<std::optional<Rejection>()> memory_pressure) {
  AdmissionLimits a;
  a.max_input_tokens = c.limits.max_input_tokens;
  a.max_total_tokens = c.limits.max_total_tokens;
  a.kv_blocks = pool.n_blocks();
  a.block_tokens = pool.block_tokens();
  a.max_concurrent_requests = c.limits.max_concurrent_requests;
  a.max_queued_tokens = c.limits.max_queued_tokens;
  a.request_budget_bytes = c.request_budget_bytes > 0 ? c.request_budget_bytes : std::numeric_limits<int64_t>::max() / 4;
  a.cost.token_text_bytes = tok.max_token_bytes();
  a.cost.sequence_slots = 3 * c.scheduler.step_seqs;
  a.memory_pressure = std::move(memory_pressure);
  a.tenants = c.scheduler.tenants;
  return a;
}

}  // namespace

EngineService::EngineService(EngineServiceConfig config, std::unique_ptr<BatchEngine> engine,
                             std::unique_ptr<KvBlockPool> pool, const TextTokenizer& tokenizer)
    : config_(std::move(config)),
      pool_(std::move(pool)),
      engine_(std::move(engine)),
      tokenizer_(tokenizer),
      scheduler_(config_.scheduler, *pool_, tokenizer),
      output_(tokenizer, config_.extra_eos_ids, config_.token_trie,
              std::min(config_.scheduler.step_seqs, config_.scheduler.step_tokens)),
      admission_(admission_limits(config_, *pool_, tokenizer, [this] { return check_memory_pressure(); })) {
  scheduler_.set_fault_hook(config_.fault_hook);
  output_.set_fault_hook(config_.fault_hook);
  config_.limits.prefix_caching = pool_->prefix_caching();  // /info says what the pool does
  ready_ = true;
  thread_ = std::thread([this] { run(); });
}

EngineService::~EngineService() { shutdown(0.0); }

std::optional<Rejection> EngineService::check_memory_pressure() const {
  const MemoryPressure* p = config_.memory_pressure;
  if (!p || !p->active()) return std::nullopt;
  const MemoryPressure::Figures f = p->figures();
  return Rejection{Error{ErrorCode::kOverloaded,
                         "Memory pressure: usage is " + format_bytes(f.usage_bytes) +
                             "; new requests are refused from the high-water mark " + format_bytes(f.high_water_bytes) +
                             " until usage is below " + format_bytes(f.rearm_bytes) + " (limit " +
                             format_bytes(f.limit_bytes) + ")"},
                   1.0, kMemoryPressureReason};
}

SubmitResult EngineService::submit(std::vector<GenerationRequest> items, EventSink sink) {
  std::variant<Admitted, Rejection> admitted = admission_.admit(items, st_tokens_per_second_.load());
  if (auto* r = std::get_if<Rejection>(&admitted)) return SubmitResult{0, std::move(*r)};
  const uint64_t ticket = std::get<Admitted>(admitted).ticket;
  auto sub = std::make_unique<Submission>();
  sub->ticket = ticket;
  sub->charge = std::get<Admitted>(admitted).charge;
  // The sink also tells us when the submission is over: its counts are
  // released before the client hears the last final event.
  auto remaining = std::make_shared<size_t>(items.size());
  sub->sink = [this, sink = std::move(sink), remaining, ticket](TokenEvent&& ev) {
    const bool last = ev.final && --*remaining == 0;
    // Released before the client hears the last final event, and even when the sink throws
    // (the scheduler contains that fault).
    if (last) admission_.release(ticket);
    sink(std::move(ev));
  };
  sub->pending.assign(std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
  const auto n_items = static_cast<int64_t>(sub->pending.size());
  std::unique_lock<std::mutex> lock(mu_);
  if (stop_) {
    lock.unlock();
    admission_.release(ticket);
    return SubmitResult{0, reject(ErrorCode::kUnavailable, "the server is shutting down")};
  }
  st_inbox_items_ += n_items;  // queued from now on, before the engine thread sees it
  inbox_.push_back(std::move(sub));
  lock.unlock();
  cv_.notify_one();
  return SubmitResult{ticket, std::nullopt, std::get<Admitted>(admitted).charge};
}

void EngineService::cancel(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(ticket);
  }
  cv_.notify_one();
}

ServiceStats EngineService::stats() const {
  ServiceStats s;
  s.queued_requests = st_queued_ + st_inbox_items_;
  s.queued_tokens = st_queued_tokens_;
  s.running_requests = st_running_;
  s.batch_current_size = st_batch_size_;
  s.batch_current_max_tokens = st_batch_tokens_;
  s.kv_blocks_total = pool_->n_blocks();
  s.kv_blocks_used = st_blocks_used_;
  s.generated_tokens_per_second = st_tokens_per_second_;
  s.engine_faults_total = st_faults_;
  s.admission_fill = admission_.fill();
  s.prefix_cache_queried_tokens = st_prefix_queried_;
  s.prefix_cache_hit_tokens = st_prefix_hits_;
  s.prefix_cache_blocks = pool_->cached_blocks();
  s.prefix_cache_reclaimable_blocks = pool_->reclaimable_blocks();
  s.prefix_cache_evictions = pool_->evictions();
  s.preemptions_total = st_preemptions_;
  s.recomputed_tokens_total = st_recomputed_;
  {
    std::lock_guard<std::mutex> lock(tenants_mu_);
    s.tenants = st_tenants_;
  }
  const std::vector<int64_t> tokens = admission_.tenant_tokens(), refusals = admission_.tenant_refusals();
  const TenantTable table = with_default_tenant(config_.scheduler.tenants);
  s.tenants.resize(table.size());
  for (size_t t = 0; t < table.size(); ++t) {
    s.tenants[t].name = table[t].name;
    s.tenants[t].weight = table[t].weight;
    s.tenants[t].queued_tokens = t < tokens.size() ? tokens[t] : 0;
    s.tenants[t].refusals = t < refusals.size() ? refusals[t] : 0;
  }
  return s;
}

void EngineService::drain_inbox(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<Submission>> subs;
  std::vector<uint64_t> cancels;
  subs.swap(inbox_);
  cancels.swap(cancels_);
  lock.unlock();
  int64_t items = 0;
  for (auto& s : subs) {
    items += static_cast<int64_t>(s->pending.size());
    scheduler_.add(std::move(s));
  }
  if (items > 0) {  // the scheduler counts them now: the figures first, then the inbox's share
    st_queued_ = scheduler_.waiting_count();
    st_queued_tokens_ = scheduler_.waiting_tokens();
    st_inbox_items_ -= items;
  }
  for (uint64_t t : cancels) {
    scheduler_.cancel(t);
    admission_.release(t);  // a cancelled submission sends no final events
  }
  lock.lock();
}

void EngineService::record_step(int64_t tokens, double seconds) {
  // exponentially weighted drain rate of generated tokens
  if (seconds > 0) {
    const double rate = static_cast<double>(tokens) / seconds;
    const double old = st_tokens_per_second_.load();
    st_tokens_per_second_ = old == 0.0 ? rate : 0.9 * old + 0.1 * rate;
  }
  st_running_ = scheduler_.running_count();  // before the queue: a sequence moving over is never missed
  st_queued_ = scheduler_.waiting_count();
  st_queued_tokens_ = scheduler_.waiting_tokens();
  st_batch_size_ = scheduler_.last_batch_size();
  st_batch_tokens_ = scheduler_.last_batch_tokens();
  st_blocks_used_ = pool_->used_blocks();
  st_faults_ = scheduler_.faults();
  st_prefix_queried_ = scheduler_.prefix_queried_tokens();
  st_prefix_hits_ = scheduler_.prefix_hit_tokens();
  st_preemptions_ = scheduler_.preemptions();
  st_recomputed_ = scheduler_.recomputed_tokens();
  std::lock_guard<std::mutex> lock(tenants_mu_);
  const std::vector<TenantUse>& use = scheduler_.tenant_use();
  st_tenants_.resize(use.size());
  for (size_t t = 0; t < use.size(); ++t) {
    TenantStats& ts = st_tenants_[t];
    ts.name = scheduler_.tenants()[t].name;
    ts.weight = scheduler_.tenants()[t].weight;
    ts.waiting = use[t].waiting;
    ts.running = use[t].running;
    ts.kv_blocks = use[t].kv_blocks;
    ts.served_tokens = use[t].served_tokens;
    ts.preemptions = use[t].preemptions;
  }
}

void EngineService::run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || !cancels_.empty() || !scheduler_.idle(); });
    drain_inbox(lock);
    if (stop_) break;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t generated = step_once();
    record_step(generated,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    lock.lock();
  }
  lock.unlock();
  scheduler_.abort_all(Error{ErrorCode::kUnavailable, "the server shut down before this request finished"});
}

// An exception here never leaves the engine thread: the step's sequences (all of them
// when it came before a plan existed) end with an internal error; the rest go on.
int64_t EngineService::step_once() {
  StepPlan plan;
  try {
    plan = scheduler_.schedule();
    if (plan.empty()) return 0;
    scheduler_.inject_fault(FaultSite::kStep);
    PromptRows rows(output_, plan);
    output_.start_masks(plan);
    auto logits = engine_->step(plan.steps, plan.wants_rows ? &rows : nullptr);
    if (!logits.ok()) {
      output_.clear_masks();
      spdlog::error("step of {} sequences failed: {}; they end with an error", plan.steps.size(),
                    logits.error().message);
      scheduler_.fail_step(plan, Error{ErrorCode::kInternal, "generation failed: " + logits.error().message});
      return 0;
    }
    scheduler_.record_written(plan);
    scheduler_.deliver(output_.process(plan, *logits, engine_->config().vocab_size));
  } catch (...) {
    output_.clear_masks();
    const std::string what = describe_current_exception();
    if (plan.empty()) {
      spdlog::error("engine fault while scheduling: {}; every queued and running request ends with an error, "
                    "the server goes on", what);
    } else {
      spdlog::error("engine fault in a step of {} sequences: {}; they end with an error, the server goes on",
                    plan.steps.size(), what);
    }
    scheduler_.fail_step(plan, fault_error(what));
    return 0;
  }
  int64_t generated = 0;  // sequences that got a token this step
  for (const SeqStep& st : plan.steps) generated += st.want_logits ? 1 : 0;
  return generated;
}

void EngineService::shutdown(double grace_seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
  }
  admission_.stop_accepting();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (admission_.in_flight() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
  ready_ = false;
}

}  // namespace plimsoll::sched
