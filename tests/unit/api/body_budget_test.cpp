// The body budget charged as bytes arrive: reservations that grow and
// shrink, which body is cut when it is short (the slowest that holds bytes,
// never one faster than the requester), the JSON tree charged as it is
// built, and the transport over raw sockets: heads that declare a length and
// send nothing hold nothing, the slowest body is cut for a faster one, and a
// requester slower than everyone holding the budget gets 429.
#include <thread>

#include "api/api_config.h"
#include "api/body_budget.h"
#include "api/request_json.h"
#include "api_fixture.h"
#include "raw_socket.h"

namespace plimsoll::testing {
namespace {

using api::BodyBudget;
using api::BodyReader;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

BodyReader reader(uint64_t id, int64_t received, int64_t held, Clock::time_point head_at) {
  BodyReader r;
  r.id = id;
  r.received = received;
  r.held = held;
  r.head_at = head_at;
  return r;
}

// --- the victim choice -------------------------------------------------------

TEST(BodyBudgetCuts, SlowestHoldingBytesIsCutFirst) {
  const auto now = Clock::now();
  const std::vector<BodyReader> readers = {
      reader(1, 100'000, 100'000, now - seconds(1)),  // 100 KB/s
      reader(2, 1'000, 16'384, now - seconds(10)),    // 100 B/s: the slowest holding bytes
      reader(3, 0, 0, now - seconds(20)),             // idle: holds nothing, cutting it frees nothing
      reader(4, 50'000, 65'536, now - seconds(5)),    // 10 KB/s
  };
  api::CutPlan one = api::plan_cuts(readers, 10'000, 0, /*requester=*/0, now);
  ASSERT_TRUE(one.enough);
  EXPECT_EQ(one.cuts, (std::vector<uint64_t>{2}));
  api::CutPlan two = api::plan_cuts(readers, 70'000, 0, 0, now);
  ASSERT_TRUE(two.enough);
  EXPECT_EQ(two.cuts, (std::vector<uint64_t>{2, 4}));
  api::CutPlan all = api::plan_cuts(readers, 200'000, 0, 0, now);
  EXPECT_FALSE(all.enough);  // everyone together holds too little: nobody is cut for nothing
  EXPECT_TRUE(all.cuts.empty());
}

TEST(BodyBudgetCuts, NobodyFasterThanTheRequesterIsCut) {
  const auto now = Clock::now();
  const std::vector<BodyReader> readers = {
      reader(1, 100'000, 100'000, now - seconds(1)),  // 100 KB/s
      reader(2, 1'000, 16'384, now - seconds(10)),    // 100 B/s
      reader(7, 5'000, 16'384, now - seconds(1)),     // the requester: 5 KB/s
  };
  api::CutPlan p = api::plan_cuts(readers, 10'000, 0, /*requester=*/7, now);
  ASSERT_TRUE(p.enough);
  EXPECT_EQ(p.cuts, (std::vector<uint64_t>{2}));
  // More than the slower one holds: the requester is refused, nobody is cut.
  api::CutPlan refused = api::plan_cuts(readers, 50'000, 0, 7, now);
  EXPECT_FALSE(refused.enough);
  EXPECT_TRUE(refused.cuts.empty());
  // The slowest of all asks: refused.
  EXPECT_FALSE(api::plan_cuts(readers, 1, 0, /*requester=*/2, now).enough);
}

TEST(BodyBudgetCuts, BodiesOfLikeSpeedAreNotCutForEachOther) {
  const auto now = Clock::now();
  const std::vector<BodyReader> readers = {
      reader(1, 1'000, 16'384, now - seconds(10)),  // 100 B/s: 50x slower than the requester
      reader(2, 2'500, 30'000, now - seconds(1)),   // 2.5 KB/s: only 2x slower
      reader(7, 5'000, 16'384, now - seconds(1)),   // the requester: 5 KB/s
  };
  EXPECT_EQ(api::plan_cuts(readers, 10'000, 0, 7, now).cuts, (std::vector<uint64_t>{1}));
  EXPECT_FALSE(api::plan_cuts(readers, 20'000, 0, 7, now).enough);  // reader 2 is not slow enough
  // A body already read may cut both.
  EXPECT_EQ(api::plan_cuts(readers, 20'000, 0, 0, now).cuts, (std::vector<uint64_t>{1, 2}));
}

TEST(BodyBudgetCuts, BytesAlreadyOnTheirWayAreNotCutTwice) {
  const auto now = Clock::now();
  std::vector<BodyReader> readers = {reader(1, 10, 20'000, now - seconds(5)), reader(2, 10, 20'000, now - seconds(4))};
  readers[0].cut = true;
  api::CutPlan p = api::plan_cuts(readers, 15'000, /*pending=*/20'000, 0, now);
  EXPECT_TRUE(p.enough);
  EXPECT_TRUE(p.cuts.empty());
  api::CutPlan more = api::plan_cuts(readers, 30'000, 20'000, 0, now);
  ASSERT_TRUE(more.enough);
  EXPECT_EQ(more.cuts, (std::vector<uint64_t>{2}));
}

TEST(BodyBudgetCuts, EqualRatesCutTheOlderHead) {
  const auto now = Clock::now();
  const std::vector<BodyReader> readers = {reader(1, 0, 16'384, now - seconds(1)),
                                           reader(2, 0, 16'384, now - seconds(3))};
  api::CutPlan p = api::plan_cuts(readers, 1, 0, 0, now);
  ASSERT_TRUE(p.enough);
  EXPECT_EQ(p.cuts, (std::vector<uint64_t>{2}));
}

// --- the budget --------------------------------------------------------------

TEST(BodyBudgetCharge, ReservationsGrowShrinkAndReturnEverything) {
  auto budget = BodyBudget::create(1000);
  {
    api::BodyReservation r = budget->open();
    EXPECT_TRUE(r.try_grow(600));
    EXPECT_FALSE(r.try_grow(500));  // nothing taken when it does not fit
    EXPECT_EQ(budget->used_bytes(), 600);
    r.shrink(200);
    EXPECT_EQ(r.bytes(), 400);
    EXPECT_EQ(budget->used_bytes(), 400);
    api::BodyReservation moved = std::move(r);
    EXPECT_EQ(budget->used_bytes(), 400);
    EXPECT_TRUE(moved.try_grow(600));
    EXPECT_EQ(budget->used_bytes(), 1000);
    moved.release();
    EXPECT_EQ(budget->used_bytes(), 0);
    EXPECT_FALSE(moved.try_grow(1));  // released: detached from the budget
  }
  EXPECT_EQ(budget->used_bytes(), 0);
}

TEST(BodyBudgetCharge, MakeRoomCutsTheSlowestAndWaitsForItsBytes) {
  auto budget = BodyBudget::create(100'000);
  const auto now = Clock::now();
  api::BodyReservation slow_bytes = budget->open();
  api::BodyReservation fast_bytes = budget->open();
  ASSERT_TRUE(slow_bytes.try_grow(60'000));
  ASSERT_TRUE(fast_bytes.try_grow(30'000));
  int slow_cut = 0, fast_cut = 0;
  const uint64_t slow = budget->begin_reading(now - seconds(10), [&] { ++slow_cut; });
  const uint64_t fast = budget->begin_reading(now - seconds(1), [&] { ++fast_cut; });
  budget->note_progress(slow, 1'000, 60'000);
  budget->note_progress(fast, 30'000, 30'000);
  const uint64_t me = budget->begin_reading(now - seconds(1), [] {});
  budget->note_progress(me, 10'000, 0);  // 10 KB/s: the slow one (100 B/s) may go, not the fast (30 KB/s)

  EXPECT_EQ(budget->make_room(20'000, me, now), BodyBudget::Room::kRetry);
  EXPECT_EQ(slow_cut, 1);
  EXPECT_EQ(fast_cut, 0);
  EXPECT_EQ(budget->cuts(), 1u);
  // Its bytes are on their way: asking again cuts nobody else.
  EXPECT_EQ(budget->make_room(20'000, me, now), BodyBudget::Room::kRetry);
  EXPECT_EQ(slow_cut, 1);
  EXPECT_EQ(fast_cut, 0);
  // The cut connection closes: its bytes come back and the step fits.
  budget->end_reading(slow);
  slow_bytes.release();
  api::BodyReservation mine = budget->open();
  EXPECT_TRUE(mine.try_grow(20'000));
  // Now only a faster body holds bytes: the requester is refused, nobody cut.
  EXPECT_EQ(budget->make_room(60'000, me, now), BodyBudget::Room::kRefuse);
  EXPECT_EQ(fast_cut, 0);
  // A body already read (requester 0) outranks every reader.
  EXPECT_EQ(budget->make_room(60'000, 0, now), BodyBudget::Room::kRetry);
  EXPECT_EQ(fast_cut, 1);
  budget->end_reading(fast);
  budget->end_reading(me);
  EXPECT_TRUE(budget->readers().empty());
}

TEST(BodyBudgetCharge, DefaultHoldsOneLargestBodyOrEveryConnectionsTypicalOne) {
  api::ApiConfig c;
  const int64_t largest = api::body_reservation_bytes(c.payload_limit_bytes);
  EXPECT_EQ(api::body_budget_bytes(c), std::max(largest, 256 * api::body_reservation_bytes(api::kTypicalBodyBytes)));
  c.max_connections = 4096;
  EXPECT_EQ(api::body_budget_bytes(c), 4096 * api::body_reservation_bytes(api::kTypicalBodyBytes));
  c.max_body_bytes_in_flight = 123'456'789;
  EXPECT_EQ(api::body_budget_bytes(c), 123'456'789);
}

// --- the JSON tree, charged as it is built -----------------------------------

std::string prompts_body(int n) {
  json inputs = json::array();
  for (int i = 0; i < n; ++i) inputs.push_back("prompt number " + std::to_string(i) + " with some words");
  return json{{"inputs", inputs}}.dump();
}

TEST(BodyBudgetTree, TheTreeIsChargedInStepsAsItIsBuilt) {
  auto budget = BodyBudget::create(int64_t{1} << 30);
  const std::string body = prompts_body(5000);
  api::BodyReservation r = budget->open();
  Result<json> j = api::parse_request_json(body, r);
  ASSERT_TRUE(j.ok()) << j.error().message;
  const int64_t counted = api::counted_tree_bytes(*j);
  EXPECT_GE(r.bytes(), counted);                                 // the tree is covered
  EXPECT_LT(r.bytes(), counted + api::kTreeChargeStepBytes);     // in steps, not its worst case
  EXPECT_LT(r.bytes(), api::json_tree_limit_bytes(static_cast<int64_t>(body.size())) / 2);
  EXPECT_EQ(budget->used_bytes(), r.bytes());
  r.release();
  EXPECT_EQ(budget->used_bytes(), 0);
}

TEST(BodyBudgetTree, AFullBudgetIsOverloadedAndTheCapStaysAValidationError) {
  const std::string body = prompts_body(5000);
  auto budget = BodyBudget::create(100'000);
  api::BodyReservation hog = budget->open();
  ASSERT_TRUE(hog.try_grow(90'000));  // a body already read holds it: nobody can be cut
  api::BodyReservation r = budget->open();
  Result<json> j = api::parse_request_json(body, r);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kOverloaded) << j.error().message;
  EXPECT_NE(j.error().message.find("--max-body-bytes-in-flight"), std::string::npos) << j.error().message;
  EXPECT_EQ(r.bytes(), 0);  // what it had charged went back
  EXPECT_EQ(budget->used_bytes(), 90'000);

  // Over the per-body cap: 422 (kInvalidArgument) as before, and nothing kept.
  hog.release();
  api::BodyReservation capped = budget->open();
  Result<json> over = api::parse_request_json("[" + std::string(9999, '[') + "]", capped, {100'000, 10'000});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(budget->used_bytes(), 0);
}

TEST(BodyBudgetTree, ATreeStepCutsTheSlowestReader) {
  const std::string body = prompts_body(500);
  auto budget = BodyBudget::create(200'000);
  api::BodyReservation slow_bytes = budget->open();
  ASSERT_TRUE(slow_bytes.try_grow(190'000));
  std::atomic<int> cut{0};
  const uint64_t slow = budget->begin_reading(Clock::now() - seconds(5), [&] { ++cut; });
  budget->note_progress(slow, 10, 190'000);
  // The "connection" closes shortly after it is cut, returning its bytes.
  std::thread closer([&] {
    while (cut.load() == 0) std::this_thread::sleep_for(milliseconds(1));
    budget->end_reading(slow);
    slow_bytes.release();
  });
  api::BodyReservation r = budget->open();
  Result<json> j = api::parse_request_json(body, r);
  closer.join();
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ(cut.load(), 1);
  EXPECT_GT(r.bytes(), 0);
}

// --- over the wire ---------------------------------------------------------------

std::string post_head(int64_t content_length) {
  return "POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

// A valid /generate body padded with spaces to `size` bytes.
std::string padded_body(int64_t size) {
  std::string b = json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}}.dump();
  return b + std::string(static_cast<size_t>(size) - b.size(), ' ');
}

constexpr int64_t kLimit = 10'000;  // --payload-limit in these tests

class BodyBudgetWireTest : public ApiTest {
 protected:
  // The smallest budget allowed: one largest body with its worst-case tree
  // (334,096 bytes), so 33 bodies of 10,000 bytes fill it.
  void SetUp() override {
    start([](api::ApiConfig& c) {
      c.payload_limit_bytes = kLimit;
      c.max_body_bytes_in_flight = api::body_reservation_bytes(kLimit);
    });
  }

  void expect_generate_200_within(milliseconds limit) {
    const auto t0 = Clock::now();
    auto r = post("/generate", json{{"inputs", "hi"}, {"parameters", {{"max_new_tokens", 2}}}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_LT(Clock::now() - t0, limit);
  }
};

TEST_F(BodyBudgetWireTest, HeadsThatSendNothingHoldNothing) {
  // Each of these would have reserved the whole budget at its head.
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (int i = 0; i < 16; ++i) {
    idle.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(idle.back()->send(post_head(kLimit)));
  }
  std::this_thread::sleep_for(milliseconds(100));
  for (int i = 0; i < 5; ++i) expect_generate_200_within(seconds(2));
  // A full-size body is served too: nothing is held for the idle heads.
  RawSocket full(server_->port());
  ASSERT_TRUE(full.send(post_head(kLimit) + padded_body(kLimit)));
  const std::string answered = full.read_until("generated_text", seconds(10));
  EXPECT_EQ(status_of(answered), 200) << answered;
  for (auto& s : idle) EXPECT_FALSE(s->closed_within(milliseconds(1)));  // nobody needed to cut them
}

TEST_F(BodyBudgetWireTest, TheSlowestBodyIsCutForAFasterOne) {
  // 33 bodies that sent 9,900 of their 10,000 bytes at once and stall: they
  // hold 330,000 of the 334,096-byte budget.
  std::vector<std::unique_ptr<RawSocket>> stalled;
  for (int i = 0; i < 33; ++i) {
    stalled.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(stalled.back()->send(post_head(kLimit) + padded_body(kLimit).substr(0, 9'900)));
    std::this_thread::sleep_for(milliseconds(5));
  }
  std::this_thread::sleep_for(milliseconds(300));
  // A whole body at once is faster than all of them: the slowest go.
  RawSocket fast(server_->port());
  ASSERT_TRUE(fast.send(post_head(kLimit) + padded_body(kLimit)));
  const std::string answered = fast.read_until("generated_text", seconds(10));
  EXPECT_EQ(status_of(answered), 200) << answered;
  // The oldest (slowest) stalled body was cut, with a 429 naming the budget.
  const std::string cut = stalled[0]->read_all(seconds(5));
  if (!cut.empty()) {
    EXPECT_EQ(status_of(cut), 429) << cut;
    EXPECT_NE(cut.find("--max-body-bytes-in-flight"), std::string::npos) << cut;
  }
  EXPECT_TRUE(stalled[0]->closed_within(seconds(1)));
  stalled.clear();
  expect_generate_200_within(seconds(2));
}

TEST_F(BodyBudgetWireTest, ARequesterSlowerThanEveryHolderIs429WithRetryAfter) {
  std::vector<std::unique_ptr<RawSocket>> holders;
  for (int i = 0; i < 33; ++i) {
    holders.push_back(std::make_unique<RawSocket>(server_->port()));
    ASSERT_TRUE(holders.back()->send(post_head(kLimit) + padded_body(kLimit).substr(0, 9'900)));
  }
  RawSocket slow(server_->port());
  ASSERT_TRUE(slow.send(post_head(kLimit)));
  std::this_thread::sleep_for(milliseconds(1500));
  ASSERT_TRUE(slow.send(padded_body(kLimit).substr(0, 100)));  // 100 bytes in 1.5 s
  const std::string refused = slow.read_all(seconds(5));
  ASSERT_EQ(status_of(refused), 429) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  EXPECT_NE(refused.find("--max-body-bytes-in-flight"), std::string::npos) << refused;
  for (auto& h : holders) EXPECT_FALSE(h->closed_within(milliseconds(1)));  // faster: kept
  // One finishes. Served, or 429 when its tree finds no room: either way the
  // others, which arrive about as fast, are not cut for it.
  ASSERT_TRUE(holders.back()->send(std::string(100, ' ')));
  const std::string finished = holders.back()->read_all(seconds(10));
  EXPECT_TRUE(status_of(finished) == 200 || status_of(finished) == 429) << finished;
  for (size_t i = 0; i + 1 < holders.size(); ++i) EXPECT_FALSE(holders[i]->closed_within(milliseconds(1))) << i;
  // They leave: the budget comes back whole (a largest body needs all of it).
  holders.clear();
  RawSocket full(server_->port());
  ASSERT_TRUE(full.send(post_head(kLimit) + padded_body(kLimit)));
  const std::string answered = full.read_until("generated_text", seconds(10));
  EXPECT_EQ(status_of(answered), 200) << answered;
  expect_generate_200_within(seconds(2));
}

}  // namespace
}  // namespace plimsoll::testing
