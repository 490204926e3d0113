// Fairness before the engine (api/tenant_shares.h): the share arithmetic,
// and each HTTP-side resource shared by tenant — worker threads and queue,
// the preparation pool, the body budget and busy connections: tenant A
// fills its share and tenant B still gets through; with one tenant, A can
// use everything. Then the transport: one tenant's endless generations do
// not hold every worker or connection.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "api/body_budget.h"
#include "api/connection_registry.h"
#include "api/prep_pool.h"
#include "api/tenant_shares.h"
#include "api/worker_pool.h"
#include "api_fixture.h"
#include "raw_socket.h"

namespace plimsoll::testing {
namespace {

using api::TenantShares;
using api::WorkerPool;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

// --- the arithmetic ------------------------------------------------------------

TEST(TenantShares, OneTenantMayUseEverything) {
  const TenantShares one(10, {});
  EXPECT_EQ(one.tenants(), 1u);
  EXPECT_EQ(one.limit(0, {0}), 10);
  EXPECT_TRUE(one.fits(0, 10, {0}));
  EXPECT_FALSE(one.fits(0, 1, {10}));
  const TenantShares weighted(10, {3.0});
  EXPECT_EQ(weighted.limit(0, {7}), 10);
}

TEST(TenantShares, ReservesAreHalfTheWeightedShareAndOthersMayNotTakeThem) {
  const TenantShares s(16, {3.0, 1.0});
  EXPECT_EQ(s.reserve(0), 6);  // 16 x 3/4 / 2
  EXPECT_EQ(s.reserve(1), 2);  // 16 x 1/4 / 2
  EXPECT_EQ(s.limit(0, {0, 0}), 14);  // all but B's unused reserve
  EXPECT_EQ(s.limit(1, {0, 0}), 10);
  EXPECT_EQ(s.limit(0, {0, 5}), 11);  // B uses more than its reserve: all of that is B's
  EXPECT_TRUE(s.fits(0, 14, {0, 0}));
  EXPECT_FALSE(s.fits(0, 15, {0, 0}));
  EXPECT_TRUE(s.fits(1, 2, {14, 0})) << "B always gets its reserve";
  EXPECT_FALSE(s.fits(1, 3, {14, 0}));
}

TEST(TenantShares, AtLeastOneUnitWhenTheCapacityAllowsAndTheReservableParts) {
  EXPECT_EQ(TenantShares(4, {1.0, 1.0}).reserve(1), 1);
  EXPECT_EQ(TenantShares(6, {1.0, 1.0, 1.0}).reserve(2), 1);
  EXPECT_EQ(TenantShares(3, {1.0, 1.0}).reserve(0), 0) << "fewer than 2 units per tenant: no reserves";
  EXPECT_EQ(TenantShares(3, {1.0, 1.0}).limit(0, {0, 0}), 3);
  const TenantShares part(1000, {1.0, 1.0}, 200);  // reserves from 200 of the 1000
  EXPECT_EQ(part.reserve(0), 50);
  EXPECT_EQ(part.limit(0, {0, 0}), 950);
}

TEST(TenantShares, ATenantInsideItsReserveAlwaysFits) {
  std::mt19937 rng(7);
  const std::vector<double> weights = {1.0, 2.0, 0.5, 4.0};
  const TenantShares s(100, weights);
  std::vector<int64_t> used(weights.size(), 0);
  for (int step = 0; step < 20000; ++step) {
    const size_t t = rng() % weights.size();
    if (rng() % 3 == 0 && used[t] > 0) {
      --used[t];
      continue;
    }
    if (used[t] < s.reserve(t)) {
      ASSERT_TRUE(s.fits(t, 1, used)) << "step " << step;
    }
    if (s.fits(t, 1, used)) ++used[t];
    int64_t total = 0;
    for (int64_t u : used) total += u;
    ASSERT_LE(total, 100);
  }
}

// --- worker threads and their queue ----------------------------------------------

// Tasks that wait until released, counting how many run.
class Gate {
 public:
  std::function<void()> task() {
    return [this] {
      std::unique_lock<std::mutex> lock(mutex_);
      ++running_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return open_; });
      --running_;
      ++done_;
      changed_.notify_all();
    };
  }
  bool wait_running(int n, milliseconds timeout = milliseconds(10000)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return running_ == n; });
  }
  bool wait_done(int n, milliseconds timeout = milliseconds(10000)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return done_ == n; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int running_ = 0;
  int done_ = 0;
  bool open_ = false;
};

TEST(WorkerPoolTenants, OneTenantMayHoldEveryThreadAndQueuePlace) {
  Gate a;
  WorkerPool pool(4, 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool.post(0, a.task()).outcome, WorkerPool::Posted::kQueued) << i;
  ASSERT_TRUE(a.wait_running(4));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pool.post(0, a.task()).outcome, WorkerPool::Posted::kQueued) << i;
  EXPECT_EQ(pool.post(0, a.task()).outcome, WorkerPool::Posted::kFull) << "the server-wide refusal, as before";
  a.open();
  ASSERT_TRUE(a.wait_done(8));
}

TEST(WorkerPoolTenants, ATenantAtItsShareLeavesTheOthersReserveFree) {
  Gate a, b;
  WorkerPool pool(4, 4, {1.0, 1.0});  // threads: reserves 1 + 1; threads + queue: reserves 2 + 2
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pool.post(0, a.task()).outcome, WorkerPool::Posted::kQueued) << i;
  ASSERT_TRUE(a.wait_running(3));  // 3 of the 4 threads: one is B's reserve
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pool.post(0, a.task()).outcome, WorkerPool::Posted::kQueued) << i;
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(pool.running(), (std::vector<int64_t>{3, 0})) << "A's fourth waits though a thread is idle";
  const WorkerPool::PostResult over = pool.post(0, a.task());
  EXPECT_EQ(over.outcome, WorkerPool::Posted::kTenantFull);
  EXPECT_EQ(over.held, 6);
  EXPECT_EQ(over.limit, 6);
  // B's task runs on the reserved thread at once, though A's wait longer.
  EXPECT_EQ(pool.post(1, b.task()).outcome, WorkerPool::Posted::kQueued);
  ASSERT_TRUE(b.wait_running(1));
  EXPECT_EQ(pool.running(), (std::vector<int64_t>{3, 1}));
  b.open();
  a.open();
  ASSERT_TRUE(a.wait_done(6));
  ASSERT_TRUE(b.wait_done(1));
}

TEST(WorkerPoolTenants, TheTenantWithFewestRunningPerWeightGoesFirst) {
  Gate hold;
  std::mutex order_mutex;
  std::vector<int> order;
  WorkerPool pool(4, 16, {1.0, 1.0});
  for (int i = 0; i < 3; ++i) ASSERT_EQ(pool.post(0, hold.task()).outcome, WorkerPool::Posted::kQueued);
  ASSERT_TRUE(hold.wait_running(3));
  // One thread is free, and only B may use it while A runs 3. Queue A, A, B:
  // B's runs first (A is at its share), then the rest.
  Gate one;
  ASSERT_EQ(pool.post(1, one.task()).outcome, WorkerPool::Posted::kQueued);  // occupies the 4th thread
  ASSERT_TRUE(one.wait_running(1));
  const auto record = [&](int tenant) {
    return [&order_mutex, &order, tenant] {
      std::lock_guard<std::mutex> lock(order_mutex);
      order.push_back(tenant);
    };
  };
  ASSERT_EQ(pool.post(0, record(0)).outcome, WorkerPool::Posted::kQueued);
  ASSERT_EQ(pool.post(0, record(0)).outcome, WorkerPool::Posted::kQueued);
  ASSERT_EQ(pool.post(1, record(1)).outcome, WorkerPool::Posted::kQueued);
  one.open();  // B's thread frees: A (3 running) is at its share, B (0 running) goes first
  ASSERT_TRUE(one.wait_done(1));
  hold.open();
  ASSERT_TRUE(hold.wait_done(3));
  const auto deadline = Clock::now() + seconds(10);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(order_mutex);
      if (order.size() == 3 || Clock::now() > deadline) break;
    }
    std::this_thread::sleep_for(milliseconds(1));
  }
  pool.stop();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 1);
}

// --- the preparation pool ----------------------------------------------------------

TEST(PrepPoolTenants, ATenantAtItsShareGets429NamingItAndAnotherStillRuns) {
  api::TenantRefusals refusals(2);
  api::PrepPool pool(4, 4, milliseconds(20000), 1, nullptr, api::TenantSet{{"default", "batch"}, {1.0, 1.0}},
                     &refusals);
  // Threads: reserves 1 + 1, so batch runs at most 3; threads + places:
  // reserves 2 + 2, so batch holds at most 6.
  std::atomic<bool> release{false};
  std::atomic<int> started{0};
  const auto hold = [&] {
    ++started;
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    return Status{};
  };
  std::vector<std::thread> batch;
  std::vector<Status> got(6);
  const auto deadline = Clock::now() + seconds(10);
  for (int i = 0; i < 6; ++i) {
    batch.emplace_back([&, i] { got[i] = pool.run(hold, nullptr, 1); });
    while (pool.in_flight() < i + 1 && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
  }
  while (started.load() < 3 && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
  ASSERT_EQ(pool.in_flight(), 6);
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_EQ(started.load(), 3) << "batch's fourth waits though a thread is idle";
  const Status over = pool.run([] { return Status{}; }, nullptr, 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, ErrorCode::kOverloaded);
  EXPECT_NE(over.error().message.find("tenant 'batch'"), std::string::npos) << over.error().message;
  EXPECT_EQ(refusals.snapshot(), (std::vector<int64_t>{0, 1}));
  // The default tenant's preparation runs on the thread batch may not take.
  EXPECT_TRUE(pool.run([] { return Status{}; }, nullptr, 0).ok());
  release.store(true);
  for (auto& t : batch) t.join();
  for (const Status& s : got) EXPECT_TRUE(s.ok());
}

TEST(PrepPoolTenants, OneTenantMayUseEveryThreadAndPlace) {
  api::PrepPool pool(2, 2, milliseconds(20000));
  std::atomic<bool> release{false};
  const auto hold = [&] {
    while (!release.load()) std::this_thread::sleep_for(milliseconds(1));
    return Status{};
  };
  std::vector<std::thread> held;
  const auto deadline = Clock::now() + seconds(10);
  for (int i = 0; i < 4; ++i) {
    held.emplace_back([&] { EXPECT_TRUE(pool.run(hold, nullptr).ok()); });
    while (pool.in_flight() < i + 1 && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(1));
    if (i < 2) std::this_thread::sleep_for(milliseconds(50));  // a thread takes it before the next one queues
  }
  ASSERT_EQ(pool.in_flight(), 4);
  const Status over = pool.run([] { return Status{}; }, nullptr);
  EXPECT_EQ(over.error().code, ErrorCode::kOverloaded);
  EXPECT_NE(over.error().message.find("--prep-threads"), std::string::npos) << over.error().message;
  release.store(true);
  for (auto& t : held) t.join();
}

// --- the body budget -----------------------------------------------------------------

TEST(BodyBudgetTenants, ATenantHoldsAtMostItsShareAndAnotherStillGetsItsReserve) {
  auto budget = api::BodyBudget::create(100'000, {1.0, 1.0});  // reserves 25'000 each
  api::BodyReservation a = budget->open(0);
  EXPECT_TRUE(a.try_grow(75'000));
  EXPECT_FALSE(a.try_grow(1)) << "the rest is B's reserve";
  EXPECT_EQ(budget->tenant_used_bytes(0), 75'000);
  EXPECT_EQ(budget->tenant_limit_bytes(0), 75'000);
  api::BodyReservation b = budget->try_reserve(25'000, 1);
  EXPECT_EQ(b.bytes(), 25'000);
  EXPECT_EQ(budget->used_bytes(), 100'000);
  b.release();
  a.release();
  EXPECT_EQ(budget->tenant_used_bytes(0), 0);
  // One tenant: the whole budget.
  auto one = api::BodyBudget::create(100'000);
  api::BodyReservation all = one->open();
  EXPECT_TRUE(all.try_grow(100'000));
}

TEST(BodyBudgetTenants, ATenantAtItsShareCutsItsOwnSlowestBodyNotAnotherTenantsWithinItsReserve) {
  auto budget = api::BodyBudget::create(100'000, {1.0, 1.0});
  const auto now = Clock::now();
  api::BodyReservation a_slow = budget->open(0), b_slow = budget->open(1);
  ASSERT_TRUE(a_slow.try_grow(60'000));
  ASSERT_TRUE(b_slow.try_grow(20'000));  // within B's reserve
  int a_cut = 0, b_cut = 0;
  const uint64_t a_id = budget->begin_reading(now - seconds(10), [&] { ++a_cut; }, 0);
  const uint64_t b_id = budget->begin_reading(now - seconds(20), [&] { ++b_cut; }, 1);  // the slowest of all
  budget->note_progress(a_id, 1'000, 60'000);
  budget->note_progress(b_id, 100, 20'000);
  const uint64_t me = budget->begin_reading(now - seconds(1), [] {}, 0);
  budget->note_progress(me, 100'000, 0);
  // A asks for 20'000 more: its limit is 75'000. Cutting B's body would not
  // raise it (B is inside its reserve); A's own slow body does.
  EXPECT_EQ(budget->make_room(20'000, me, now, 0), api::BodyBudget::Room::kRetry);
  EXPECT_EQ(a_cut, 1);
  EXPECT_EQ(b_cut, 0);
  budget->end_reading(a_id);
  budget->end_reading(b_id);
  budget->end_reading(me);
}

TEST(BodyBudgetTenants, ATenantWithNoSlowerBodyOfItsOwnIsRefusedWhileTheBudgetHasRoom) {
  auto budget = api::BodyBudget::create(100'000, {1.0, 1.0});
  api::BodyReservation a = budget->open(0);
  ASSERT_TRUE(a.try_grow(75'000));  // a body already read: nothing to cut
  const uint64_t me = budget->begin_reading(Clock::now() - seconds(1), [] {}, 0);
  EXPECT_EQ(budget->make_room(1'000, me, Clock::now(), 0), api::BodyBudget::Room::kRefuse);
  EXPECT_EQ(budget->make_room(1'000, 0, Clock::now(), 1), api::BodyBudget::Room::kRetry) << "B has room";
  budget->end_reading(me);
}

TEST(BodyBudgetTenants, WithTenantsTheDefaultBudgetAddsRoomForReservesBeyondOneLargestBody) {
  api::ApiConfig c;
  const int64_t largest = api::body_reservation_bytes(c.payload_limit_bytes);
  const int64_t typical = 256 * api::body_reservation_bytes(api::kTypicalBodyBytes);
  c.tenant_names = {"default", "batch"};
  EXPECT_EQ(api::body_budget_bytes(c), largest + typical);
  EXPECT_EQ(api::body_reservable_bytes(c), typical);
  // So with the others idle, any tenant can send the largest body.
  auto budget = api::BodyBudget::create(api::body_budget_bytes(c), {1.0, 1.0}, api::body_reservable_bytes(c));
  EXPECT_GE(budget->tenant_limit_bytes(1), largest);
}

// --- busy connections ---------------------------------------------------------------

TEST(ConnectionRegistryTenants, ATenantKeepsAtMostItsShareBusyAndAnotherStillGetsServed) {
  api::ConnectionRegistry registry(4, {1.0, 1.0});  // reserves 1 + 1
  std::vector<uint64_t> ids;
  for (int i = 0; i < 4; ++i) {
    auto id = registry.admit([] {});
    ASSERT_TRUE(id);
    registry.set_reading(*id, false);  // its head is in
    ids.push_back(*id);
  }
  EXPECT_TRUE(registry.try_serve(ids[0], 0).ok);
  EXPECT_TRUE(registry.try_serve(ids[1], 0).ok);
  EXPECT_TRUE(registry.try_serve(ids[2], 0).ok);
  const auto over = registry.try_serve(ids[3], 0);
  EXPECT_FALSE(over.ok);
  EXPECT_EQ(over.busy, 3);
  EXPECT_EQ(over.limit, 3);
  EXPECT_TRUE(registry.try_serve(ids[3], 1).ok) << "B's reserve";
  EXPECT_EQ(registry.busy(), (std::vector<int64_t>{3, 1}));
  // A new head forgets the request's tenant.
  registry.set_reading(ids[0], true);
  EXPECT_EQ(registry.busy(), (std::vector<int64_t>{2, 1}));
}

TEST(ConnectionRegistryTenants, OneTenantMayKeepEveryConnectionBusy) {
  api::ConnectionRegistry registry(4);
  for (int i = 0; i < 4; ++i) {
    auto id = registry.admit([] {});
    ASSERT_TRUE(id);
    registry.set_reading(*id, false);
    EXPECT_TRUE(registry.try_serve(*id, 0).ok) << i;
  }
  EXPECT_FALSE(registry.admit([] {})) << "every connection busy: refused, as before";
}

// --- the transport ------------------------------------------------------------------

std::string post_request(const std::string& path, const std::string& body, const std::string& tenant) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
         "Content-Type: application/json\r\nX-Tenant: " + tenant + "\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

class TenantTransportTest : public ApiTest {
 protected:
  void with_tenants(std::function<void(api::ApiConfig&)> tweak) {
    restart([&](api::ApiConfig& c) {
      c.tenant_names = {"default", "batch"};
      c.tenant_weights = {1.0, 1.0};
      c.trust_tenant_header = true;
      tweak(c);
    });
    service_.endless_ = true;
    service_.token_delay_ = milliseconds(20);
  }
  // `n` endless non-streamed generations of batch, each holding a worker until cancelled.
  std::vector<std::unique_ptr<RawSocket>> hold(int n) {
    std::vector<std::unique_ptr<RawSocket>> held;
    const std::string body = json{{"inputs", "hi"}}.dump();
    for (int i = 0; i < n; ++i) {
      held.push_back(std::make_unique<RawSocket>(server_->port()));
      EXPECT_TRUE(held.back()->send(post_request("/generate", body, "batch")));
    }
    return held;
  }
  int tokenize_as(const std::string& tenant) {
    RawSocket s(server_->port());
    const std::string body = json{{"inputs", "hi"}}.dump();
    EXPECT_TRUE(s.send(post_request("/tokenize", body, tenant)));
    return status_of(s.read_all(seconds(10)));
  }
};

TEST_F(TenantTransportTest, OneTenantsEndlessGenerationsLeaveAWorkerForAnother) {
  with_tenants([](api::ApiConfig& c) { c.threads = 4; });  // reserves 1 + 1 thread
  auto held = hold(4);
  ASSERT_TRUE(service_.wait_for_submissions(3, seconds(10)));
  const auto t0 = Clock::now();
  EXPECT_EQ(tokenize_as("default"), 200);
  EXPECT_LT(Clock::now() - t0, seconds(5));
  // Batch's fourth waits for one of its own to end: it was never submitted.
  EXPECT_FALSE(service_.wait_for_submissions(4, milliseconds(200)));
}

TEST_F(TenantTransportTest, ATenantAtItsShareOfConnectionsGets429AndAnotherIsServed) {
  with_tenants([](api::ApiConfig& c) { c.max_connections = 4; });  // reserves 1 + 1 connection
  auto held = hold(3);
  ASSERT_TRUE(service_.wait_for_submissions(3, seconds(10)));
  {
    RawSocket s(server_->port());
    ASSERT_TRUE(s.send(post_request("/tokenize", json{{"inputs", "hi"}}.dump(), "batch")));
    const std::string response = s.read_all(seconds(10));
    EXPECT_EQ(status_of(response), 429) << response;
    EXPECT_NE(response.find("tenant 'batch'"), std::string::npos) << response;
    EXPECT_NE(response.find("--max-connections"), std::string::npos) << response;
    EXPECT_NE(response.find("Retry-After"), std::string::npos) << response;
  }
  EXPECT_EQ(server_->tenant_refusals(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(tokenize_as("default"), 200);
  {  // Routes answered at once on the I/O threads hold no connection: not refused.
    RawSocket s(server_->port());
    ASSERT_TRUE(s.send("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Tenant: batch\r\n\r\n"));
    EXPECT_EQ(status_of(s.read_all(seconds(10))), 200);
  }
}

}  // namespace
}  // namespace plimsoll::testing
