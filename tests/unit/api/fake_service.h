// FakeService: a deterministic GenerationService for API tests — scripted
// tokens, configurable rejections and failures, and a record of cancels.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/stop.h"
#include "sched/generation_service.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll::testing {

class FakeService final : public sched::GenerationService {
 public:
  explicit FakeService(const TextTokenizer& tokenizer) : tokenizer_(tokenizer) {
    limits_.model_id = "fake/model";
    limits_.model_dtype = "f32";
    limits_.max_input_tokens = 64;
    limits_.max_total_tokens = 96;
    limits_.max_batch_total_tokens = 4096;
    limits_.max_concurrent_requests = 128;
    limits_.max_stop_sequences = 4;
    limits_.max_best_of = 1;
    limits_.max_top_n_tokens = 5;
    limits_.vocab_size = tokenizer.vocab_size();
    script_ids_ = tokenizer.encode("hello world", false);
  }
  ~FakeService() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [ticket, flag] : cancel_flags_) flag->store(true);
    }
    for (auto& t : threads_) t.join();
  }

  // --- knobs (set before requests) ---
  sched::ServiceLimits limits_;
  bool ready_ = true;
  std::optional<sched::Rejection> reject_;   // refuse every submission
  std::optional<Error> fail_with_;           // every item ends with this error
  std::atomic<bool> endless_{false};         // tokens until cancelled (a test may clear it while one runs)
  std::chrono::milliseconds token_delay_{0};
  std::vector<int32_t> script_ids_;          // generated ids, cycled
  std::optional<int64_t> reserve_limit_bytes_;  // reserve_bytes above it: 422 (as admission's whole budget)
  bool pressure_ = false;  // the memory backstop is tripped: whole-request reservations get its 429

  // --- records ---
  std::vector<sched::GenerationRequest> last_items() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_items_;
  }
  std::vector<uint64_t> cancelled() {
    std::lock_guard<std::mutex> lock(mutex_);
    return cancelled_;
  }
  // Waits until `n` submissions were accepted.
  bool wait_for_submissions(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return next_ticket_ >= n; });
  }
  bool wait_for_cancel(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [this] { return !cancelled_.empty(); });
  }

  sched::SubmitResult submit(std::vector<sched::GenerationRequest> items, sched::EventSink sink) override {
    std::lock_guard<std::mutex> lock(mutex_);
    last_items_ = items;
    if (reject_) return {0, reject_};
    uint64_t ticket = ++next_ticket_;
    changed_.notify_all();
    auto flag = std::make_shared<std::atomic<bool>>(false);
    cancel_flags_[ticket] = flag;
    threads_.emplace_back([this, items = std::move(items), sink = std::move(sink), flag] {
      // Items finish in reverse order, so routes must restore input order.
      for (size_t i = items.size(); i-- > 0;) run_item(i, items[i], sink, *flag);
    });
    return {ticket, std::nullopt};
  }
  void cancel(uint64_t ticket) override {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_.push_back(ticket);
    if (auto it = cancel_flags_.find(ticket); it != cancel_flags_.end()) it->second->store(true);
    changed_.notify_all();
  }
  sched::ByteReservation reserve_bytes(int64_t bytes, const std::string& what, sched::BackstopCheck backstop) override {
    std::lock_guard<std::mutex> lock(mutex_);
    reserved_.push_back(bytes);
    if (backstop == sched::BackstopCheck::kNow && pressure_) {
      return {nullptr, sched::Rejection{Error{ErrorCode::kOverloaded, "Memory pressure"}, 3.0,
                                        sched::kMemoryPressureReason}};
    }
    if (reserve_limit_bytes_ && bytes > *reserve_limit_bytes_) {
      return {nullptr, sched::Rejection{Error{ErrorCode::kOutOfMemory, what + " needs " + std::to_string(bytes) +
                                                                           " bytes of request memory"}}};
    }
    return {};
  }
  std::vector<int64_t> reserved() {
    std::lock_guard<std::mutex> lock(mutex_);
    return reserved_;
  }
  sched::ServiceLimits limits() const override { return limits_; }
  sched::ServiceStats stats() const override {
    sched::ServiceStats s;
    s.queued_requests = 3;
    s.running_requests = 2;
    s.admission_fill = 0.25;
    s.kv_blocks_total = 100;
    s.kv_blocks_used = 7;
    s.preemptions_total = 2;
    return s;
  }
  bool ready() const override { return ready_; }

 private:
  sched::TokenInfo info(int32_t prev, int32_t id, float logprob) const {
    return {id, logprob, tokenizer_.piece_string(prev, id), tokenizer_.is_special(id)};
  }

  // A token's logprob: -0.25 for seed 42 (the default), lower for other seeds
  // (best_of tests rank items by it).
  static float logprob_for(const sched::GenerationRequest& item) {
    return -0.25f - 0.1f * static_cast<float>((item.params.seed.value_or(42) + 3) % 5);
  }

  void run_item(size_t index, const sched::GenerationRequest& item, const sched::EventSink& sink,
                const std::atomic<bool>& cancelled) {
    StreamDecoder decoder(tokenizer_, item.prompt_ids.empty() ? -1 : item.prompt_ids.back());
    StopMatcher stops(item.params.stop);
    int32_t prev = item.prompt_ids.empty() ? -1 : item.prompt_ids.back();
    const int64_t n = item.params.max_new_tokens;
    const float logprob = logprob_for(item);
    double sum = 0;
    for (int64_t k = 0; endless_ || k < n; ++k) {
      if (cancelled.load()) return;
      if (token_delay_.count() > 0) std::this_thread::sleep_for(token_delay_);
      sched::TokenEvent e;
      e.index = index;
      int32_t id = script_ids_[static_cast<size_t>(k) % script_ids_.size()];
      e.token = info(prev, id, logprob);
      sum += logprob;
      e.text = decoder.push(id);
      for (int32_t t = 0; t < item.top_n_tokens; ++t) e.top_tokens.push_back(info(prev, id, logprob - static_cast<float>(t)));
      if (k == 0) add_prefill(item, &e);
      prev = id;
      const bool stopped = stops.push(e.text);
      const bool last = stopped || (!endless_ && k + 1 == n);
      if (last && !stopped) {
        const std::string tail = decoder.finish();
        e.text += tail;
        stops.push(tail);
      }
      if (last) finish(item, k + 1, stops, stopped, sum, &e);
      sink(std::move(e));
      if (last) return;
    }
  }

  void add_prefill(const sched::GenerationRequest& item, sched::TokenEvent* e) const {
    if (!item.prompt_details) return;
    int32_t prev = -1;
    for (int32_t id : item.prompt_ids) {
      e->prefill.push_back(info(prev, id, prev < 0 ? NAN : -1.0f));
      if (item.prompt_top_n > 0) {
        e->prefill_top.emplace_back();
        if (prev >= 0) e->prefill_top.back().push_back(info(-1, id, -1.0f));
      }
      prev = id;
    }
  }

  void finish(const sched::GenerationRequest& item, int64_t generated, const StopMatcher& stops, bool stopped,
              double logprob_sum, sched::TokenEvent* e) {
    e->final = true;
    e->finish_reason = stopped ? FinishReason::kStopSequence : FinishReason::kLength;
    e->stop_offset = stopped ? static_cast<int64_t>(stops.match_begin()) : -1;
    e->generated_tokens = generated;
    e->input_tokens = static_cast<int64_t>(item.prompt_ids.size());
    e->seed = item.params.seed.value_or(42);
    e->generated_text = stops.text();
    e->logprob_sum = logprob_sum;
    e->queue_seconds = 0.001;
    e->inference_seconds = 0.01;
    e->error = fail_with_;
  }

  const TextTokenizer& tokenizer_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<sched::GenerationRequest> last_items_;
  std::vector<uint64_t> cancelled_;
  std::vector<int64_t> reserved_;
  std::map<uint64_t, std::shared_ptr<std::atomic<bool>>> cancel_flags_;
  std::vector<std::thread> threads_;
  uint64_t next_ticket_ = 0;
};

}  // namespace plimsoll::testing
