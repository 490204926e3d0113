// EngineService: the GenerationService of a real model. One engine thread
// owns the scheduler, the batch engine, the output processor and the KV
// pool; HTTP threads submit and cancel through a locked inbox. Admission
// (422 / 429 / 503) happens at submit(), before the caller sends any byte.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/batch_engine.h"
#include "memory/memory_pressure.h"
#include "sched/admission.h"
#include "sched/generation_service.h"
#include "sched/output_processor.h"
#include "sched/scheduler.h"

namespace plimsoll::sched {

struct EngineServiceConfig {
  ServiceLimits limits;            // published; validated against at submit
  SchedulerLimits scheduler;
  // Ids that end a sequence besides the tokenizer's EOS (generation_config.json
  // eos_token_id, an id or a list); finish reason eos_token, unless ignore_eos.
  std::vector<int32_t> extra_eos_ids;
  const MemoryPressure* memory_pressure = nullptr;  // the backstop (memory/memory_watcher.h); null: none
  FaultHook fault_hook;            // tests only: throws at a chosen site (sched/fault.h)
  int64_t request_budget_bytes = 0;  // request memory in flight (the plan's request term); 0: not bounded
  std::shared_ptr<const TokenTrie> token_trie;  // built at start-up (server/engine_setup); null: built here
};

class EngineService final : public GenerationService {
 public:
  // Takes the engine and pool (made from the memory plan) and starts the engine thread.
  EngineService(EngineServiceConfig config, std::unique_ptr<BatchEngine> engine,
                std::unique_ptr<KvBlockPool> pool, const TextTokenizer& tokenizer);
  ~EngineService() override;

  SubmitResult submit(std::vector<GenerationRequest> items, EventSink sink) override;
  ByteReservation reserve_bytes(int64_t bytes, const std::string& what, BackstopCheck backstop) override {
    return admission_.reserve(bytes, what, backstop);
  }
  void cancel(uint64_t ticket) override;
  ServiceLimits limits() const override { return config_.limits; }
  ServiceStats stats() const override;
  bool ready() const override { return ready_.load(); }

  // Stops accepting (503), lets work in flight finish for up to grace_seconds,
  // then aborts what is left with an error event and stops the engine thread.
  void shutdown(double grace_seconds);

 private:
  // The memory backstop: 429 while the kernel's usage figure is above its high-water mark.
  std::optional<Rejection> check_memory_pressure() const;
  void run();
  int64_t step_once();  // one step, faults contained; returns the sequences that got a token
  void drain_inbox(std::unique_lock<std::mutex>& lock);
  void record_step(int64_t tokens, double seconds);

  EngineServiceConfig config_;
  std::unique_ptr<KvBlockPool> pool_;
  std::unique_ptr<BatchEngine> engine_;
  const TextTokenizer& tokenizer_;
  Scheduler scheduler_;  // engine thread only
  OutputProcessor output_;  // engine thread only
  Admission admission_;  // limits, tickets, what is in flight (its own lock)

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Submission>> inbox_;
  std::vector<uint64_t> cancels_;
  bool stop_ = false;

  std::atomic<bool> ready_{false};
  // stats written by the engine thread
  std::atomic<int64_t> st_queued_{0}, st_queued_tokens_{0}, st_running_{0}, st_batch_size_{0},
      st_batch_tokens_{0}, st_blocks_used_{0}, st_generated_{0}, st_faults_{0}, st_prefix_queried_{0},
      st_prefix_hits_{0}, st_preemptions_{0}, st_recomputed_{0};
  std::atomic<double> st_tokens_per_second_{0.0};
  // Items submitted and not yet handed to the scheduler (counted as queued meanwhile).
  std::atomic<int64_t> st_inbox_items_{0};
  mutable std::mutex tenants_mu_;
  std::vector<TenantStats> st_tenants_;  // the scheduler's per-tenant figures after each step (under tenants_mu_)
  std::thread thread_;
};

}  // namespace plimsoll::sched
