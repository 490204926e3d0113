// DeferredService: a GenerationService that answers 503 (and /health says
// unhealthy) until the real one is attached — so the HTTP side can listen
// while the model loads and warms up, as Kubernetes startup probes expect.
#pragma once

#include <atomic>

#include "sched/generation_service.h"

namespace plimsoll::sched {

class DeferredService final : public GenerationService {
 public:
  explicit DeferredService(ServiceLimits loading_limits) : loading_limits_(std::move(loading_limits)) {}

  // Attaches the real service (once; it must outlive this object's use).
  void attach(GenerationService* service) { target_.store(service, std::memory_order_release); }

  SubmitResult submit(std::vector<GenerationRequest> items, EventSink sink) override {
    if (GenerationService* t = target()) return t->submit(std::move(items), std::move(sink));
    return SubmitResult{0, Rejection{Error{ErrorCode::kUnavailable, "the model is still loading"}, 1.0}};
  }
  ByteReservation reserve_bytes(int64_t bytes, const std::string& what, BackstopCheck backstop) override {
    if (GenerationService* t = target()) return t->reserve_bytes(bytes, what, backstop);
    return ByteReservation{nullptr, Rejection{Error{ErrorCode::kUnavailable, "the model is still loading"}, 1.0}};
  }
  void cancel(uint64_t ticket) override {
    if (GenerationService* t = target()) t->cancel(ticket);
  }
  ServiceLimits limits() const override {
    const GenerationService* t = target();
    return t ? t->limits() : loading_limits_;
  }
  ServiceStats stats() const override {
    const GenerationService* t = target();
    return t ? t->stats() : ServiceStats{};
  }
  bool ready() const override {
    const GenerationService* t = target();
    return t && t->ready();
  }

 private:
  GenerationService* target() const { return target_.load(std::memory_order_acquire); }

  ServiceLimits loading_limits_;
  std::atomic<GenerationService*> target_{nullptr};
};

}  // namespace plimsoll::sched
