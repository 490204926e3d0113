// Ramp rules: the batch schedule, stopping at 85 % of the limit, on a failed
// step or a plateau, and the measured ceiling.
#include "planner/ramp.h"

#include <gtest/gtest.h>

namespace plimsoll::planner {
namespace {

RampStep step(int64_t batch, int64_t blocks, int64_t measured, const char* outcome = "ok") {
  RampStep s;
  s.batch = batch;
  s.kv_blocks = blocks;
  s.predicted_bytes = measured;
  s.measured_rss_bytes = measured;
  s.outcome = outcome;
  return s;
}

TEST(Ramp, DoublesUpToTheLastBatch) {
  EXPECT_EQ(ramp_batches(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(ramp_batches(8), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(ramp_batches(11), (std::vector<int64_t>{1, 2, 4, 8, 11}));
}

TEST(Ramp, StopsAt85PercentAndTheCeilingIsTheStepBelow) {
  RampResult r;
  r.limit_bytes = 1000;
  r.steps = {step(1, 10, 500), step(2, 20, 700)};
  EXPECT_EQ(stop_reason(r), "");
  r.steps.push_back(step(4, 40, 860));
  EXPECT_NE(stop_reason(r).find("85 %"), std::string::npos);
  set_ceiling(r);
  EXPECT_EQ(r.ceiling_batch, 2);
  EXPECT_EQ(r.ceiling_bytes, 700);
}

TEST(Ramp, TheCgroupPeakCountsTowardsTheLine) {
  RampResult r;
  r.limit_bytes = 1000;
  RampStep s = step(1, 10, 500);
  s.cgroup_peak_bytes = 900;
  r.steps = {s};
  EXPECT_NE(stop_reason(r), "");
}

TEST(Ramp, StopsOnAFailedStep) {
  RampResult r;
  r.limit_bytes = 1000;
  r.steps = {step(1, 10, 100), step(2, 20, 0, "killed")};
  EXPECT_EQ(stop_reason(r), "killed");
  set_ceiling(r);
  EXPECT_EQ(r.ceiling_batch, 1);
}

TEST(Ramp, StopsOnAPlateauOnlyWhenKvBlocksStopGrowing) {
  RampResult r;
  r.limit_bytes = 1000;
  r.steps = {step(1, 10, 500), step(2, 20, 501)};  // tiny growth but more blocks: go on
  EXPECT_EQ(stop_reason(r), "");
  r.steps.push_back(step(4, 20, 502));  // the server queues: blocks flat, memory flat
  EXPECT_NE(stop_reason(r).find("plateau"), std::string::npos);
}

TEST(Ramp, ErrorRatioIsAgainstThePrediction) {
  RampStep s = step(1, 1, 110);
  s.predicted_bytes = 100;
  EXPECT_DOUBLE_EQ(s.error_ratio(), 0.1);
}

}  // namespace
}  // namespace plimsoll::planner
