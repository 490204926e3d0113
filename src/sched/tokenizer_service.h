// TokenizerService: the GenerationService of a server that has a tokenizer
// and no model (`plimsoll serve -m tokenizer.json` or a vocabulary-only GGUF):
// /tokenize is answered, with its bytes held within the request budget as
// everywhere else; a generation is refused (422) saying why.
#pragma once

#include <string>
#include <utility>

#include "sched/admission.h"
#include "sched/generation_service.h"

namespace plimsoll::sched {

class TokenizerService final : public GenerationService {
 public:
  // `limits`: what /info shows (model_id, vocab_size; token bounds 0: none apply).
  TokenizerService(ServiceLimits limits, int64_t request_budget_bytes)
      : limits_(std::move(limits)), admission_(admission_limits(request_budget_bytes)) {}

  SubmitResult submit(std::vector<GenerationRequest>, EventSink) override {
    return SubmitResult{0, Rejection{Error{ErrorCode::kUnsupported, kNoModel}, 0}, nullptr};
  }
  ByteReservation reserve_bytes(int64_t bytes, const std::string& what, BackstopCheck backstop) override {
    return admission_.reserve(bytes, what, backstop);
  }
  void cancel(uint64_t) override {}
  ServiceLimits limits() const override { return limits_; }
  ServiceStats stats() const override { return {}; }
  bool ready() const override { return true; }

  static constexpr const char* kNoModel =
      "this server has a tokenizer and no model (-m names a tokenizer file): it answers /tokenize; "
      "to generate, start it with -m MODEL";

 private:
  static AdmissionLimits admission_limits(int64_t request_budget_bytes) {
    AdmissionLimits l;
    l.request_budget_bytes = request_budget_bytes;
    return l;
  }

  ServiceLimits limits_;
  Admission admission_;
};

}  // namespace plimsoll::sched
