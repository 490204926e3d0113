#include "sched/deferred_service.h"

#include <gtest/gtest.h>

namespace plimsoll::sched {
namespace {

struct Accepting : GenerationService {
  uint64_t submits = 0;
  SubmitResult submit(std::vector<GenerationRequest>, EventSink) override { return {++submits, std::nullopt}; }
  void cancel(uint64_t) override {}
  ServiceLimits limits() const override { ServiceLimits l; l.max_total_tokens = 99; return l; }
  ServiceStats stats() const override { return {}; }
  bool ready() const override { return true; }
};

TEST(DeferredService, UnavailableUntilAttachedThenForwards) {
  ServiceLimits loading;
  loading.model_id = "m";
  DeferredService front(loading);
  EXPECT_FALSE(front.ready());
  auto r = front.submit({GenerationRequest{}}, [](TokenEvent&&) {});
  ASSERT_FALSE(r.accepted());
  EXPECT_EQ(r.rejection->error.code, ErrorCode::kUnavailable);
  EXPECT_EQ(front.limits().model_id, "m");
  Accepting real;
  front.attach(&real);
  EXPECT_TRUE(front.ready());
  EXPECT_TRUE(front.submit({GenerationRequest{}}, [](TokenEvent&&) {}).accepted());
  EXPECT_EQ(real.submits, 1);
  EXPECT_EQ(front.limits().max_total_tokens, 99);
}

}  // namespace
}  // namespace plimsoll::sched
