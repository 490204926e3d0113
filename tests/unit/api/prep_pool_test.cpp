// PrepPool: the preparation stage's pool — results, refusals, cancellation
// when the client leaves, the deadline, and stop() with work running and queued.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/prep_pool.h"
#include "core/work_control.h"
#include "api/grammar_params.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll::api {
namespace {

using std::chrono::milliseconds;

// Work that runs until its preparation is stopped (as a grammar compile does
// at its poll points), or `limit` passes.
Status spin_until_stopped(milliseconds limit = milliseconds(20000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (const WorkControl* c = current_work_control()) PLIMSOLL_TRY(c->check());
    std::this_thread::sleep_for(milliseconds(1));
  }
  return make_error(ErrorCode::kInternal, "never stopped");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(PrepPool, RunsThePreparationAndReturnsItsStatus) {
  PrepPool pool(2, 8, milliseconds(10000));
  int value = 0;
  EXPECT_TRUE(pool.run([&] { value = 42; return Status{}; }, nullptr).ok());
  EXPECT_EQ(value, 42);
  const Status s = pool.run([] { return Status(make_error(ErrorCode::kInvalidArgument, "bad field")); }, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "bad field");
  EXPECT_EQ(pool.in_flight(), 0);
}

TEST(PrepPool, ExceptionsStayOnItsThread) {
  PrepPool pool(1, 8, milliseconds(10000));
  const Status j = pool.run([]() -> Status {
    [[maybe_unused]] const nlohmann::json unfinished = nlohmann::json::parse("{");
    return {};
  }, nullptr);
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.error().code, ErrorCode::kInvalidArgument);
  const Status e = pool.run([]() -> Status { throw std::runtime_error("boom"); }, nullptr);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, ErrorCode::kInternal);
}

TEST(PrepPool, AClientThatLeavesCancelsItsPreparation) {
  PrepPool pool(1, 8, milliseconds(60000));
  auto gone = std::make_shared<std::atomic<bool>>(false);
  std::thread leaver([gone] {
    std::this_thread::sleep_for(milliseconds(100));
    gone->store(true);
  });
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = pool.run([] { return spin_until_stopped(); }, gone.get());
  leaver.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kCancelled);
  EXPECT_LT(seconds_since(t0), 5.0);
}

TEST(PrepPool, TheDeadlineStopsRunningWorkAndRefusesWorkThatWaitedPastIt) {
  PrepPool pool(1, 8, milliseconds(300));
  std::vector<Status> got(2);
  // The first does 600 ms of work before its next poll point: past its deadline.
  std::thread first([&] {
    got[0] = pool.run([] {
      std::this_thread::sleep_for(milliseconds(600));
      return current_work_control()->check();
    }, nullptr);
  });
  std::this_thread::sleep_for(milliseconds(50));
  // Queued behind the first until its own deadline (300 ms from its hand-over) passed.
  std::thread second([&] { got[1] = pool.run([] { return Status{}; }, nullptr); });
  first.join();
  second.join();
  ASSERT_FALSE(got[0].ok());
  EXPECT_EQ(got[0].error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(got[0].error().message.find("--prep-timeout-ms"), std::string::npos) << got[0].error().message;
  ASSERT_FALSE(got[1].ok());
  EXPECT_EQ(got[1].error().code, ErrorCode::kOverloaded) << got[1].error().message;
}

TEST(PrepPool, AFullQueueIsRefusedAtOnce) {
  PrepPool pool(1, 1, milliseconds(60000));
  auto gone = std::make_shared<std::atomic<bool>>(false);
  std::atomic<bool> started{false};
  std::thread running([&] {
    (void)pool.run([&] {
      started = true;
      return spin_until_stopped();
    }, gone.get());
  });
  const auto wait_end = std::chrono::steady_clock::now() + milliseconds(5000);
  while (!started && std::chrono::steady_clock::now() < wait_end) std::this_thread::sleep_for(milliseconds(1));
  std::thread queued([&] { (void)pool.run([] { return Status{}; }, gone.get()); });
  while (pool.in_flight() < 2 && std::chrono::steady_clock::now() < wait_end) std::this_thread::sleep_for(milliseconds(1));
  std::this_thread::sleep_for(milliseconds(50));  // the second is queued (the thread is busy)
  const Status s = pool.run([] { return Status{}; }, nullptr);
  gone->store(true);
  running.join();
  queued.join();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, ErrorCode::kOverloaded);
  EXPECT_NE(s.error().message.find("--prep-threads"), std::string::npos) << s.error().message;
}

TEST(PrepPool, StopCancelsRunningAndQueuedWork) {
  PrepPool pool(1, 8, milliseconds(60000));
  std::vector<Status> got(3);
  std::vector<std::thread> callers;
  for (size_t i = 0; i < got.size(); ++i) {
    callers.emplace_back([&, i] { got[i] = pool.run([] { return spin_until_stopped(); }, nullptr); });
  }
  const auto wait_end = std::chrono::steady_clock::now() + milliseconds(5000);
  while (pool.in_flight() < 3 && std::chrono::steady_clock::now() < wait_end) std::this_thread::sleep_for(milliseconds(1));
  const auto t0 = std::chrono::steady_clock::now();
  pool.stop();
  for (auto& t : callers) t.join();
  EXPECT_LT(seconds_since(t0), 5.0);
  for (const Status& s : got) {
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kUnavailable) << s.error().message;
  }
  const Status after = pool.run([] { return Status{}; }, nullptr);
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.error().code, ErrorCode::kUnavailable);
}

TEST(PrepPool, ACompileReservesItsWorkspaceWhileItRuns) {
  std::atomic<int> held{0};
  std::atomic<int64_t> asked{0};
  std::atomic<bool> refuse{true};
  auto reserve = [&](int64_t bytes) -> Result<std::shared_ptr<void>> {
    asked = bytes;
    if (refuse) return make_error(ErrorCode::kOverloaded, "request memory is in use (--max-request-memory)");
    ++held;
    return std::shared_ptr<void>(nullptr, [&](void*) { --held; });
  };
  PrepPool pool(2, 8, milliseconds(10000), 1, reserve);
  int held_during = -1;
  const Status refused = pool.run([]() -> Status {
    auto g = grammar_from_regex("a+", GrammarLimits{});
    return g.ok() ? Status{} : Status(g.error());
  }, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kOverloaded);
  EXPECT_EQ(asked.load(), prep_workspace_bytes());
  refuse = false;
  const Status ok = pool.run([&]() -> Status {
    auto g = grammar_from_regex("[a-z]{3}", GrammarLimits{});
    held_during = held.load();  // the compile returned: its workspace is back
    return g.ok() ? Status{} : Status(g.error());
  }, nullptr);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(held_during, 0);
  EXPECT_EQ(held.load(), 0);
}

// A response_format whose compile found the request memory full is answered
// 429 (kOverloaded, the field named), not 400: the client may retry.
TEST(PrepPool, AFieldsCompileRefusedForMemoryStaysOverloaded) {
  auto reserve = [](int64_t) -> Result<std::shared_ptr<void>> {
    return make_error(ErrorCode::kOverloaded, "request memory is in use (--max-request-memory)");
  };
  PrepPool pool(1, 8, milliseconds(10000), 1, reserve);
  const json body = json::parse(R"({"response_format":{"type":"json_schema","json_schema":{"name":"x",)"
                                R"("schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}})");
  const Status refused = pool.run([&]() -> Status {
    auto g = read_response_format(FieldReader(body), GrammarLimits{});
    return g.ok() ? Status{} : Status(g.error());
  }, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kOverloaded) << refused.error().message;
  EXPECT_NE(refused.error().message.find("`response_format.json_schema.schema`"), std::string::npos);
}

TEST(PrepPool, OneCompileSlotRunsCompilesOneAtATime) {
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  auto reserve = [&](int64_t) -> Result<std::shared_ptr<void>> {
    const int now = ++inside;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(milliseconds(20));  // hold the slot a while
    return std::shared_ptr<void>(nullptr, [&](void*) { --inside; });
  };
  PrepPool pool(4, 8, milliseconds(10000), 1, reserve);
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&] {
      EXPECT_TRUE(pool.run([] {
        auto g = grammar_from_regex("(?:ab|cd)+", GrammarLimits{});
        return g.ok() ? Status{} : Status(g.error());
      }, nullptr).ok());
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(most.load(), 1);
}

}  // namespace
}  // namespace plimsoll::api
