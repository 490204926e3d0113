// Admission's charge arithmetic and decisions: what a submission is charged
// (stops once, records x alternatives, bookkeeping per sequence slot), 422
// when it can never fit the request budget, 429 while it does not fit now,
// and bytes given back when the last holder lets go.
#include "sched/admission.h"

#include <gtest/gtest.h>

#include "engine/stop.h"
#include "sched/sequence.h"

namespace plimsoll::sched {
namespace {

GenerationRequest item(int64_t prompt_tokens, int64_t max_new_tokens) {
  GenerationRequest r;
  r.prompt_ids.assign(static_cast<size_t>(prompt_tokens), 7);
  r.params.max_new_tokens = max_new_tokens;
  return r;
}

AdmissionLimits limits(int64_t budget_bytes) {
  AdmissionLimits l;
  l.max_input_tokens = 255;
  l.max_total_tokens = 256;
  l.kv_blocks = 1000;
  l.block_tokens = 16;
  l.max_concurrent_requests = 100;
  l.max_queued_tokens = 1 << 20;
  l.request_budget_bytes = budget_bytes;
  l.cost.token_text_bytes = 10;
  l.cost.sequence_slots = 4;
  return l;
}

TEST(RequestCost, OneItemIsItsPromptBookkeepingAndResponse) {
  CostModel m;
  m.token_text_bytes = 10;
  m.sequence_slots = 4;
  GenerationRequest r = item(20, 100);
  const SubmissionCost c = submission_cost({r}, m);
  EXPECT_EQ(c.prompt_bytes, 2 * 4 * 20);
  EXPECT_EQ(c.stop_bytes, 0);
  const int64_t sequence = static_cast<int64_t>(sizeof(Sequence)) + 52 * 120 + 8 * 121 + 2048;  // + prefix-cache keys
  EXPECT_EQ(c.bookkeeping_bytes, kSubmissionFixedBytes + static_cast<int64_t>(sizeof(GenerationRequest)) + 64 + sequence);
  EXPECT_EQ(c.response_bytes, kItemFixedBytes + kGeneratedTextCopies * 100 * 10);  // no records asked
  EXPECT_EQ(c.total(), c.prompt_bytes + c.stop_bytes + c.bookkeeping_bytes + c.response_bytes);
}

TEST(RequestCost, RecordsScaleWithAlternativesAndPrefillDetails) {
  CostModel m;
  m.token_text_bytes = 10;
  GenerationRequest plain = item(20, 100);
  GenerationRequest details = plain;
  details.token_records = true;
  GenerationRequest top5 = details;
  top5.top_n_tokens = 5;
  GenerationRequest prefill = plain;
  prefill.prompt_details = true;
  const int64_t base = submission_cost({plain}, m).response_bytes;
  const int64_t record = token_record_bytes(m);
  EXPECT_EQ(record, kTokenRecordBytes + kRecordBytesPerTextByte * 10);
  EXPECT_EQ(submission_cost({details}, m).response_bytes - base, 100 * record);
  EXPECT_EQ(submission_cost({top5}, m).response_bytes - base, 100 * 6 * record);
  EXPECT_EQ(submission_cost({prefill}, m).response_bytes - base, 20 * record);
  prefill.prompt_top_n = 3;  // OpenAI echo + logprobs 3: alternatives per prompt token too
  EXPECT_EQ(submission_cost({prefill}, m).response_bytes - base, 20 * 4 * record);
}

TEST(RequestCost, LogitBiasListsAreChargedOncePerSubmission) {
  std::vector<LogitBias::Entry> entries;
  for (int32_t id = 0; id < 150'000; ++id) entries.emplace_back(id, 1.0f);
  const LogitBias bias(std::move(entries));
  std::vector<GenerationRequest> items(128, item(4, 10));
  for (GenerationRequest& r : items) r.params.logit_bias = bias;  // n copies share one list
  CostModel m;
  const int64_t none = submission_cost(std::vector<GenerationRequest>(128, item(4, 10)), m).stop_bytes;
  EXPECT_EQ(submission_cost(items, m).stop_bytes - none, bias.bytes());
  EXPECT_GE(bias.bytes(), 150'000 * 8);
}

TEST(RequestCost, StopsAreStoredAndChargedOncePerSubmission) {
  SamplingParams p;
  p.stop = std::vector<std::string>(4, std::string(240'000, 's'));
  std::vector<GenerationRequest> items(2000, item(4, 10));
  for (GenerationRequest& r : items) r.params.stop = p.stop;  // what the routes do: copies share
  EXPECT_EQ(&items[0].params.stop.strings(), &items[1999].params.stop.strings());
  StopMatcher matcher(items[5].params.stop);  // the matcher shares it too
  EXPECT_EQ(items[5].params.stop.identity(), p.stop.identity());
  CostModel m;
  const SubmissionCost c = submission_cost(items, m);
  EXPECT_EQ(c.stop_bytes, p.stop.bytes());
  EXPECT_GE(c.stop_bytes, 4 * 240'000);
  EXPECT_LT(c.stop_bytes, 4 * 240'000 + 1024);
  // A second, distinct list counts too.
  items[7].params.stop = std::vector<std::string>{"end"};
  EXPECT_EQ(submission_cost(items, m).stop_bytes, p.stop.bytes() + items[7].params.stop.bytes());
}

TEST(RequestCost, SequenceStateIsChargedPerSlotNotPerItem) {
  CostModel m;
  m.sequence_slots = 4;
  const SubmissionCost ten = submission_cost(std::vector<GenerationRequest>(10, item(4, 10)), m);
  const SubmissionCost hundred = submission_cost(std::vector<GenerationRequest>(100, item(4, 10)), m);
  // 90 more items add their requests, prompts and answers, but no sequence state.
  const int64_t per_item = static_cast<int64_t>(sizeof(GenerationRequest)) + 64;
  EXPECT_EQ(hundred.bookkeeping_bytes - ten.bookkeeping_bytes, 90 * per_item);
  EXPECT_EQ(hundred.response_bytes, 10 * ten.response_bytes);
}

TEST(Admission, NeverFitsIs422WithTheNumbers) {
  Admission a(limits(1 << 20));
  GenerationRequest r = item(20, 200);
  r.token_records = true;
  r.top_n_tokens = 5;  // 200 x 6 records of ~1.7 KB: more than 1 MiB
  auto got = a.admit({r}, 10.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(got));
  const Rejection& rej = std::get<Rejection>(got);
  EXPECT_EQ(rej.error.code, ErrorCode::kOutOfMemory);
  const int64_t need = submission_cost({r}, a.limits().cost).total();
  EXPECT_NE(rej.error.message.find("needs " + std::to_string(need) + " bytes of request memory"), std::string::npos)
      << rej.error.message;
  EXPECT_NE(rej.error.message.find("the plan has 1048576 bytes"), std::string::npos) << rej.error.message;
  EXPECT_EQ(a.in_flight_bytes(), 0);
}

TEST(Admission, NotNowIs429UntilTheChargeIsGivenBack) {
  GenerationRequest r = item(20, 100);
  const int64_t one = submission_cost({r}, limits(0).cost).total();
  Admission a(limits(one + one / 2));  // room for one such submission
  auto first = a.admit({r}, 10.0);
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  EXPECT_EQ(std::get<Admitted>(first).bytes, one);
  EXPECT_EQ(a.in_flight_bytes(), one);
  auto second = a.admit({r}, 10.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(second));
  EXPECT_EQ(std::get<Rejection>(second).error.code, ErrorCode::kOverloaded);
  EXPECT_GE(std::get<Rejection>(second).retry_after_seconds, 1.0);
  EXPECT_NE(std::get<Rejection>(second).error.message.find("of request memory"), std::string::npos);
  // The engine is done (counts released) but the answer is still being sent: bytes stay charged.
  std::shared_ptr<void> http_side = std::get<Admitted>(first).charge;
  a.release(std::get<Admitted>(first).ticket);
  std::get<Admitted>(first).charge.reset();
  EXPECT_EQ(a.in_flight(), 0);
  EXPECT_EQ(a.in_flight_bytes(), one);
  EXPECT_TRUE(std::holds_alternative<Rejection>(a.admit({r}, 10.0)));
  http_side.reset();
  EXPECT_EQ(a.in_flight_bytes(), 0);
  EXPECT_TRUE(std::holds_alternative<Admitted>(a.admit({r}, 10.0)));
}

TEST(Admission, MultiItemSubmissionsCountTheirTokensAgainstTheQueueBound) {
  AdmissionLimits l = limits(int64_t{1} << 40);
  l.max_queued_tokens = 1000;
  Admission a(l);
  auto batch = a.admit(std::vector<GenerationRequest>(4, item(50, 100)), 1.0);  // 600 tokens
  ASSERT_TRUE(std::holds_alternative<Admitted>(batch));
  EXPECT_EQ(std::get<Admitted>(batch).tokens, 600);
  auto more = a.admit(std::vector<GenerationRequest>(3, item(50, 100)), 1.0);  // 450 more: over 1000
  ASSERT_TRUE(std::holds_alternative<Rejection>(more));
  EXPECT_EQ(std::get<Rejection>(more).error.code, ErrorCode::kOverloaded);
  a.release(std::get<Admitted>(batch).ticket);
  // A list longer than the whole bound still enters an empty queue (charged the bound).
  auto huge = a.admit(std::vector<GenerationRequest>(100, item(50, 100)), 1.0);
  ASSERT_TRUE(std::holds_alternative<Admitted>(huge));
  EXPECT_EQ(std::get<Admitted>(huge).tokens, 1000);
}

TEST(Admission, ReservationsHoldBytesUntilDropped) {
  Admission a(limits(10'000));
  ByteReservation big = a.reserve(20'000, "tokenizing 20000 bytes", BackstopCheck::kNow);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.rejection->error.code, ErrorCode::kOutOfMemory);
  EXPECT_NE(big.rejection->error.message.find("tokenizing 20000 bytes needs 20000 bytes"), std::string::npos)
      << big.rejection->error.message;
  ByteReservation a1 = a.reserve(6'000, "x", BackstopCheck::kNow);
  ASSERT_TRUE(a1.ok());
  ByteReservation a2 = a.reserve(6'000, "y", BackstopCheck::kAtSubmit);
  ASSERT_FALSE(a2.ok());
  EXPECT_EQ(a2.rejection->error.code, ErrorCode::kOverloaded);
  a1 = {};
  EXPECT_EQ(a.in_flight_bytes(), 0);
  EXPECT_TRUE(a.reserve(6'000, "y", BackstopCheck::kAtSubmit).ok());
}

// The protocol's KV-cache utilization (plimsoll_kv_cache_usage_perc) is this figure:
// it reaches 1 exactly where the next submission is answered 429.
TEST(Admission, FillIsTheFullestBoundAndIsOneWhereTheNext429s) {
  AdmissionLimits l = limits(int64_t{1} << 40);
  l.max_queued_tokens = 1000;
  l.max_concurrent_requests = 10;
  Admission a(l);
  EXPECT_EQ(a.fill(), 0.0);
  auto first = a.admit(std::vector<GenerationRequest>(2, item(50, 100)), 1.0);  // 300 of 1000 tokens, 1 of 10
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  EXPECT_DOUBLE_EQ(a.fill(), 0.3);
  auto second = a.admit(std::vector<GenerationRequest>(4, item(50, 125)), 1.0);  // 700 more: the whole bound
  ASSERT_TRUE(std::holds_alternative<Admitted>(second));
  EXPECT_DOUBLE_EQ(a.fill(), 1.0);
  auto third = a.admit({item(1, 1)}, 1.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(third));
  EXPECT_EQ(std::get<Rejection>(third).error.code, ErrorCode::kOverloaded);
  a.release(std::get<Admitted>(second).ticket);
  EXPECT_DOUBLE_EQ(a.fill(), 0.3);
  a.release(std::get<Admitted>(first).ticket);
  std::get<Admitted>(first).charge.reset();  // the answers are sent: their request bytes come back
  std::get<Admitted>(second).charge.reset();
  EXPECT_EQ(a.fill(), 0.0);

  l.max_queued_tokens = 1 << 20;  // the request bound binds
  l.max_concurrent_requests = 4;
  Admission by_requests(l);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(std::holds_alternative<Admitted>(by_requests.admit({item(4, 4)}, 1.0)));
  EXPECT_DOUBLE_EQ(by_requests.fill(), 1.0);
  EXPECT_TRUE(std::holds_alternative<Rejection>(by_requests.admit({item(4, 4)}, 1.0)));

  const int64_t one = submission_cost({item(20, 100)}, limits(0).cost).total();
  Admission by_bytes(limits(4 * one));  // the request-memory bound binds
  auto held = by_bytes.admit({item(20, 100)}, 1.0);
  ASSERT_TRUE(std::holds_alternative<Admitted>(held));
  EXPECT_DOUBLE_EQ(by_bytes.fill(), 0.25);
}

TEST(Admission, FillIsOneWhileEverySubmissionIsRefused) {
  AdmissionLimits l = limits(1 << 30);
  bool pressure = true;
  l.memory_pressure = [&pressure]() -> std::optional<Rejection> {
    if (!pressure) return std::nullopt;
    return Rejection{Error{ErrorCode::kOverloaded, "Memory pressure"}, 1.0, kMemoryPressureReason};
  };
  Admission a(l);
  EXPECT_EQ(a.fill(), 1.0);  // the backstop refuses: nothing in flight, still full
  EXPECT_TRUE(std::holds_alternative<Rejection>(a.admit({item(4, 4)}, 1.0)));
  pressure = false;
  EXPECT_EQ(a.fill(), 0.0);
  a.stop_accepting();  // draining: 503 for new work
  EXPECT_EQ(a.fill(), 1.0);
}

std::optional<Rejection> always_under_pressure() {
  return Rejection{Error{ErrorCode::kOverloaded, "Memory pressure"}, 2.0, kMemoryPressureReason};
}

// The backstop refuses a whole request (/tokenize) at its reservation; the work
// before a submission is refused at the submit, under the backstop's own reason.
TEST(Admission, TheBackstopRefusesReservationsThatCheckItNow) {
  AdmissionLimits l = limits(1 << 30);
  l.memory_pressure = &always_under_pressure;
  Admission a(l);
  const ByteReservation whole = a.reserve(100, "tokenizing 9 bytes", BackstopCheck::kNow);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.rejection->reason, kMemoryPressureReason);
  EXPECT_EQ(whole.rejection->retry_after_seconds, 2.0);
  EXPECT_EQ(a.in_flight_bytes(), 0);
  const ByteReservation before_submit = a.reserve(100, "tokenizing this request", BackstopCheck::kAtSubmit);
  EXPECT_TRUE(before_submit.ok());
  const auto submitted = a.admit({item(4, 4)}, 1.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(submitted));
  EXPECT_EQ(std::get<Rejection>(submitted).reason, kMemoryPressureReason);
}

TEST(Admission, ShuttingDownIs503) {
  Admission a(limits(1 << 30));
  a.stop_accepting();
  auto got = a.admit({item(4, 4)}, 1.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(got));
  EXPECT_EQ(std::get<Rejection>(got).error.code, ErrorCode::kUnavailable);
  EXPECT_FALSE(a.reserve(10, "x", BackstopCheck::kNow).ok());
}

TEST(Admission, PerItemLimitsAre422NamingTheItem) {
  Admission a(limits(1 << 30));
  auto got = a.admit({item(4, 4), item(300, 4)}, 1.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(got));
  EXPECT_EQ(std::get<Rejection>(got).error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(std::get<Rejection>(got).error.message.find("input 1:"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll::sched

namespace plimsoll::sched {
namespace {

TEST(Admission, ATenantAtItsOwnTokenCapIs429NamingItWhileOthersGetIn) {
  AdmissionLimits l = limits(int64_t{1} << 30);
  l.tenants = {TenantLimits{"default"}, TenantLimits{"batch", 1.0, 0, 0.0, 500}};
  Admission a(l);
  GenerationRequest batch = item(50, 150);  // 200 tokens
  batch.tenant = 1;
  auto first = a.admit({batch, batch}, 100.0);  // 400 of its 500
  ASSERT_TRUE(std::holds_alternative<Admitted>(first));
  auto second = a.admit({batch}, 100.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(second));
  const Rejection& r = std::get<Rejection>(second);
  EXPECT_EQ(r.error.code, ErrorCode::kOverloaded);
  EXPECT_NE(r.error.message.find("Tenant \"batch\""), std::string::npos) << r.error.message;
  EXPECT_NE(r.error.message.find("max_queued_tokens 500"), std::string::npos) << r.error.message;
  EXPECT_GT(r.retry_after_seconds, 0);
  EXPECT_TRUE(std::holds_alternative<Admitted>(a.admit({item(50, 150)}, 100.0))) << "the default tenant has no cap";
  EXPECT_EQ(a.tenant_tokens()[1], 400);
  EXPECT_EQ(a.tenant_refusals()[1], 1);
  a.release(std::get<Admitted>(first).ticket);
  EXPECT_EQ(a.tenant_tokens()[1], 0);
  // A list larger than the cap enters when the tenant has nothing in flight.
  EXPECT_TRUE(std::holds_alternative<Admitted>(a.admit({batch, batch, batch}, 100.0)));
}

TEST(Admission, AnItemLargerThanItsTenantsShareCapIs422NamingIt) {
  AdmissionLimits l = limits(int64_t{1} << 30);  // 1,000 blocks of 16 tokens
  l.tenants = {TenantLimits{"default"}, TenantLimits{"small", 1.0, 0, 0.01}};  // 10 blocks: 160 tokens
  Admission a(l);
  GenerationRequest fits = item(50, 110);  // 160 tokens: 10 blocks
  fits.tenant = 1;
  EXPECT_TRUE(std::holds_alternative<Admitted>(a.admit({fits}, 100.0)));
  GenerationRequest big = item(50, 111);  // 11 blocks: it would wait for ever
  big.tenant = 1;
  auto r = a.admit({fits, big}, 100.0);
  ASSERT_TRUE(std::holds_alternative<Rejection>(r));
  const Error& e = std::get<Rejection>(r).error;
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  EXPECT_NE(e.message.find("input 1: needs 11 KV blocks but tenant \"small\" may hold 10 (max_kv_share 0.01 of 1000)"),
            std::string::npos)
      << e.message;
  EXPECT_TRUE(std::holds_alternative<Admitted>(a.admit({item(50, 111)}, 100.0))) << "the default tenant has no cap";
}

}  // namespace
}  // namespace plimsoll::sched
