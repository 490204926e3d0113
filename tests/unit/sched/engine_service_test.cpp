// The engine service end to end on a small random model: answers equal the
// reference generation alone and under concurrency; client batches larger
// than the pool all finish in order; admission says 422 / 429 with numbers;
// cancel returns blocks; a large waiting request is not starved.
#include "sched/engine_service.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "convert/random_model.h"
#include "core/bytes.h"
#include "model/decoder_reference.h"
#include "model/decoder_weights.h"
#include "reference_generate.h"
#include "sched/request_cost.h"

namespace plimsoll::sched {
namespace {

ModelConfig config() {
  ModelConfig c;
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.ffn_dim = 128;
  c.vocab_size = 400;
  c.max_seq_len = 256;
  return c;
}

// Collects events per ticket; waits for all finals.
struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, std::vector<TokenEvent>> events;  // by item index
  size_t finals = 0;
  EventSink sink() {
    return [this](TokenEvent&& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (ev.final) ++finals;
      events[ev.index].push_back(std::move(ev));
      cv.notify_all();
    };
  }
  bool wait(size_t n, int seconds = 60) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(seconds), [&] { return finals >= n; });
  }
  std::vector<int32_t> ids(size_t index) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<int32_t> out;
    for (const TokenEvent& e : events[index]) {
      if (e.token.id >= 0) out.push_back(e.token.id);
    }
    return out;
  }
};

struct Fixture {
  LoadedModel model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ThreadPool> threads;
  std::unique_ptr<EngineService> service;
  KvBlockPool* pool = nullptr;

  explicit Fixture(int64_t kv_blocks, int64_t step_tokens = 64, int64_t step_seqs = 16,
                   int64_t max_concurrent = 64, int64_t max_queued_tokens = 1 << 20,
                   const MemoryPressure* memory_pressure = nullptr, int64_t request_budget_bytes = 0,
                   FaultHook hook = nullptr, TenantTable tenants = {}) {
    model = std::move(random_llama_in_memory(config(), DType::kF32, 21)).value();
    tokenizer = std::make_unique<Tokenizer>(std::move(Tokenizer::create(*model.vocab)).value());
    threads = std::make_unique<ThreadPool>(2);
    auto p = std::move(KvBlockPool::create(config(), kv_blocks, 16)).value();
    pool = p.get();
    auto w = std::move(bind_decoder_weights(config(), model.tensors)).value();
    auto engine = std::move(BatchEngine::create(config(), w, *p, BatchEngine::workspace_sizes(config(), step_tokens, step_seqs, 2, 256),
                                                threads.get())).value();
    EXPECT_TRUE(engine->warm_up().ok());
    EngineServiceConfig sc;
    sc.limits.max_total_tokens = 256;
    sc.limits.max_input_tokens = 255;
    sc.limits.max_concurrent_requests = max_concurrent;
    sc.limits.max_queued_tokens = max_queued_tokens;
    sc.scheduler.step_tokens = step_tokens;
    sc.scheduler.step_seqs = step_seqs;
    sc.scheduler.max_skips = 4;
    sc.memory_pressure = memory_pressure;
    sc.request_budget_bytes = request_budget_bytes;
    sc.fault_hook = std::move(hook);
    sc.scheduler.tenants = std::move(tenants);
    service = std::make_unique<EngineService>(sc, std::move(engine), std::move(p), *tokenizer);
  }

  GenerationRequest request(const std::string& prompt, int64_t max_new) {
    GenerationRequest r;
    r.prompt_ids = tokenizer->encode(prompt, true);
    r.params.max_new_tokens = max_new;
    r.params.ignore_eos = true;
    return r;
  }

  std::vector<int32_t> reference(const GenerationRequest& r) {
    DecoderReference ref(config(), std::move(bind_decoder_weights(config(), model.tensors)).value());
    ReferenceKvCache cache(config(), 256);
    std::vector<float> logits(400);
    for (size_t p = 0; p < r.prompt_ids.size(); ++p) ref.forward(r.prompt_ids[p], static_cast<int64_t>(p), cache, logits.data());
    std::vector<int32_t> out;
    for (int64_t i = 0; i < r.params.max_new_tokens; ++i) {
      out.push_back(static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin()));
      ref.forward(out.back(), static_cast<int64_t>(r.prompt_ids.size()) + i, cache, logits.data());
    }
    return out;
  }
};

std::string prompt(int i) { return "the story number " + std::to_string(i) + std::string(static_cast<size_t>(i % 7), 'a'); }

TEST(EngineService, GreedyAnswersEqualTheReferenceAloneAndConcurrently) {
  Fixture f(256);
  // alone
  {
    Collector c;
    GenerationRequest r = f.request("once upon a time", 20);
    ASSERT_TRUE(f.service->submit({r}, c.sink()).accepted());
    ASSERT_TRUE(c.wait(1));
    EXPECT_EQ(c.ids(0), f.reference(r));
  }
  // 24 different requests at once, as separate submissions
  std::vector<std::unique_ptr<Collector>> cs;
  std::vector<GenerationRequest> rs;
  for (int i = 0; i < 24; ++i) {
    cs.push_back(std::make_unique<Collector>());
    rs.push_back(f.request(prompt(i), 8 + i % 5));
    ASSERT_TRUE(f.service->submit({rs.back()}, cs.back()->sink()).accepted());
  }
  for (int i = 0; i < 24; ++i) {
    ASSERT_TRUE(cs[static_cast<size_t>(i)]->wait(1));
    EXPECT_EQ(cs[static_cast<size_t>(i)]->ids(0), f.reference(rs[static_cast<size_t>(i)])) << i;
  }
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

// The served text and finish reason equal the old single-sequence loop's
// (tests/support/reference_generate.h): to the length, and to a stop sequence
// taken from the middle of that text (kept in the text, as TGI).
TEST(EngineService, TextAndFinishEqualTheReferenceLoopWithAndWithoutAStop) {
  Fixture f(64);
  DecoderReference ref(config(), std::move(bind_decoder_weights(config(), f.model.tensors)).value());
  SamplingParams params;
  params.max_new_tokens = 12;
  auto whole = reference_generate(ref, *f.tokenizer, "once upon a time", params, {});
  ASSERT_TRUE(whole.ok());
  ASSERT_GE(whole->text.size(), 6u);
  SamplingParams stopped = params;
  stopped.stop = std::vector<std::string>{whole->text.substr(3, 3)};
  for (const SamplingParams& p : {params, stopped}) {
    auto want = reference_generate(ref, *f.tokenizer, "once upon a time", p, {});
    ASSERT_TRUE(want.ok());
    GenerationRequest r;
    r.prompt_ids = want->prompt_ids;
    r.params = p;
    Collector c;
    ASSERT_TRUE(f.service->submit({r}, c.sink()).accepted());
    ASSERT_TRUE(c.wait(1));
    std::lock_guard<std::mutex> lock(c.mu);
    const TokenEvent& last = c.events[0].back();
    EXPECT_EQ(last.generated_text, want->text);
    EXPECT_EQ(last.finish_reason, want->finish);
    EXPECT_EQ(last.generated_tokens, static_cast<int64_t>(want->generated_ids.size()));
  }
}

TEST(EngineService, ClientBatchLargerThanThePoolAllFinishInOrder) {
  Fixture f(12);  // 12 blocks of 16 tokens: 6 sequences of 32 at once
  std::vector<GenerationRequest> items;
  for (int i = 0; i < 200; ++i) items.push_back(f.request("hi " + std::to_string(i % 10), 16));
  Collector c;
  SubmitResult r = f.service->submit(items, c.sink());
  ASSERT_TRUE(r.accepted());
  ASSERT_TRUE(c.wait(200, 120));
  for (size_t i = 0; i < 200; ++i) {
    std::lock_guard<std::mutex> lock(c.mu);
    ASSERT_EQ(c.events[i].size(), 16u) << i;
    EXPECT_TRUE(c.events[i].back().final);
    EXPECT_EQ(c.events[i].back().finish_reason, FinishReason::kLength);
  }
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

// Holds the engine thread at the start of its next schedule() until opened.
struct EngineGate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false, holding = false;
  FaultHook hook() {
    return [this](FaultSite site, uint64_t) {
      if (site != FaultSite::kSchedule) return;
      std::unique_lock<std::mutex> lock(mu);
      holding = true;
      cv.notify_all();
      cv.wait(lock, [this] { return open; });
    };
  }
  bool wait_holding() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(30), [this] { return holding; });
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(EngineService, NeverFitsIs422WithNumbersAndQueueFullIs429WithRetryAfter) {
  EngineGate gate;  // the engine waits until the 429 is seen: a tiny model finishes 40 tokens in a blink
  Fixture f(4, 64, 16, /*max_concurrent=*/2, 1 << 20, nullptr, 0, gate.hook());
  Collector c;
  auto big = f.service->submit({f.request("hello", 200)}, c.sink());  // needs 13+ blocks of 4
  ASSERT_FALSE(big.accepted());
  EXPECT_EQ(big.rejection->error.code, ErrorCode::kOutOfMemory);
  EXPECT_NE(big.rejection->error.message.find("4"), std::string::npos);
  auto too_long = f.service->submit({f.request(std::string(400, 'x'), 10)}, c.sink());
  ASSERT_FALSE(too_long.accepted());
  EXPECT_EQ(too_long.rejection->error.code, ErrorCode::kInvalidArgument);
  EXPECT_NE(too_long.rejection->error.message.find("must have less than 256 tokens"), std::string::npos)
      << too_long.rejection->error.message;
  // two slow ones fill the two slots; the third is 429
  Collector c1, c2, c3;
  ASSERT_TRUE(f.service->submit({f.request("a", 40)}, c1.sink()).accepted());
  ASSERT_TRUE(f.service->submit({f.request("b", 40)}, c2.sink()).accepted());
  auto third = f.service->submit({f.request("c", 4)}, c3.sink());
  ASSERT_FALSE(third.accepted());
  EXPECT_EQ(third.rejection->error.code, ErrorCode::kOverloaded);
  EXPECT_GE(third.rejection->retry_after_seconds, 1.0);
  gate.release();
  ASSERT_TRUE(c1.wait(1));
  ASSERT_TRUE(c2.wait(1));
  // The slots are free again: each is released just after its final event reached the
  // sink, so the client may hear back a moment before; retry 429 until a deadline.
  Collector c4;
  SubmitResult fourth = f.service->submit({f.request("d", 4)}, c4.sink());
  for (int i = 0; i < 6000 && !fourth.accepted(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    fourth = f.service->submit({f.request("d", 4)}, c4.sink());
  }
  EXPECT_TRUE(fourth.accepted());
  EXPECT_TRUE(c4.wait(1));
}


// The model-server protocol's figures (plimsoll_num_requests_waiting,
// plimsoll_kv_cache_usage_perc) count a request from its admission, not from the
// engine's next step: an endpoint picker sees it at once.
TEST(EngineService, AdmittedRequestsAreQueuedAtOnceAndFillIsOneWhereThe429Starts) {
  EngineGate gate;
  Fixture f(64, 64, 16, /*max_concurrent=*/3, 1 << 20, nullptr, 0, gate.hook());
  Collector c;
  ASSERT_TRUE(f.service->submit({f.request("first", 8)}, c.sink()).accepted());
  ASSERT_TRUE(gate.wait_holding());  // drained into the scheduler; the step waits
  ServiceStats st = f.service->stats();
  EXPECT_EQ(st.queued_requests, 1);
  EXPECT_EQ(st.running_requests, 0);
  EXPECT_DOUBLE_EQ(st.admission_fill, 1.0 / 3);
  ASSERT_TRUE(f.service->submit({f.request("second", 8), f.request("third", 8)}, c.sink()).accepted());
  st = f.service->stats();  // still in the inbox: counted all the same
  EXPECT_EQ(st.queued_requests, 3);
  EXPECT_DOUBLE_EQ(st.admission_fill, 2.0 / 3);
  ASSERT_TRUE(f.service->submit({f.request("fourth", 8)}, c.sink()).accepted());
  EXPECT_DOUBLE_EQ(f.service->stats().admission_fill, 1.0);
  auto fifth = f.service->submit({f.request("fifth", 8)}, c.sink());
  ASSERT_FALSE(fifth.accepted());
  EXPECT_EQ(fifth.rejection->error.code, ErrorCode::kOverloaded);
  EXPECT_EQ(f.service->stats().queued_requests, 4);
  gate.release();
  ASSERT_TRUE(c.wait(4));
  // The figures are refreshed after the step whose final events went out: wait for them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline &&
         (f.service->stats().queued_requests != 0 || f.service->stats().running_requests != 0 ||
          f.service->stats().admission_fill != 0.0)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  st = f.service->stats();
  EXPECT_EQ(st.queued_requests, 0);
  EXPECT_EQ(st.running_requests, 0);
  EXPECT_EQ(st.admission_fill, 0.0);
}

TEST(EngineService, MemoryPressureIs429WithItsOwnReasonUntilItEnds) {
  MemoryPressure pressure;
  pressure.set_marks(300 * kMiB, 280 * kMiB, 512 * kMiB);
  Fixture f(8, 64, 16, 64, 1 << 20, &pressure);
  pressure.set_usage(301 * kMiB);
  pressure.set_active(true);
  Collector c;
  auto refused = f.service->submit({f.request("hello", 4)}, c.sink());
  ASSERT_FALSE(refused.accepted());
  EXPECT_EQ(refused.rejection->error.code, ErrorCode::kOverloaded);
  EXPECT_STREQ(refused.rejection->reason, "memory_pressure");
  EXPECT_GE(refused.rejection->retry_after_seconds, 1.0);
  EXPECT_EQ(refused.rejection->error.message,
            "Memory pressure: usage is 301.00 MiB; new requests are refused from the high-water mark 300.00 MiB "
            "until usage is below 280.00 MiB (limit 512.00 MiB)");
  // Input that can never be served is still 422, pressure or not.
  auto never = f.service->submit({f.request("hello", 300)}, c.sink());
  ASSERT_FALSE(never.accepted());
  EXPECT_EQ(never.rejection->error.code, ErrorCode::kInvalidArgument);
  pressure.set_active(false);
  ASSERT_TRUE(f.service->submit({f.request("hello", 4)}, c.sink()).accepted());
  EXPECT_TRUE(c.wait(1));
}

TEST(EngineService, CancelReturnsBlocksAndStopsEvents) {
  Fixture f(64);
  Collector c;
  // The engine thread waits in the sink at the first token until the cancel is
  // in: a tiny model can finish 200 tokens before a polling test looks.
  std::promise<void> first_token, cancelled;
  std::shared_future<void> go = cancelled.get_future().share();
  bool seen = false;
  EventSink collect = c.sink();
  auto r = f.service->submit({f.request("long one", 200)}, [&, go](TokenEvent&& ev) {
    collect(std::move(ev));
    if (seen) return;
    seen = true;
    first_token.set_value();
    go.wait();
  });
  ASSERT_TRUE(r.accepted());
  ASSERT_EQ(first_token.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_GT(f.pool->used_blocks(), 0);
  f.service->cancel(r.ticket);
  cancelled.set_value();
  // up to 30 s: under a loaded ctest -j2 the engine thread may wait long for a core
  for (int i = 0; i < 6000 && f.pool->used_blocks() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(f.pool->used_blocks(), 0);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    EXPECT_EQ(c.finals, 0u);
    EXPECT_LT(c.events[0].size(), 200u);
  }
  // the slot is free: max_concurrent is 64 but the in-flight count must be back to 0
  Collector d;
  ASSERT_TRUE(f.service->submit({f.request("next", 3)}, d.sink()).accepted());
  EXPECT_TRUE(d.wait(1));
}

TEST(EngineService, ALargeWaitingRequestIsNotStarvedBySmallOnes) {
  // The engine waits until both submissions are in: a test thread descheduled
  // between them must not let the small ones run alone.
  EngineGate gate;
  Fixture f(16, 64, 16, 64, 1 << 20, nullptr, 0, gate.hook());  // 16 blocks = 256 tokens
  Collector small_c, big_c;
  std::vector<GenerationRequest> smalls;
  for (int i = 0; i < 60; ++i) smalls.push_back(f.request("s", 30));  // 2 blocks each
  ASSERT_TRUE(f.service->submit(smalls, small_c.sink()).accepted());
  std::atomic<size_t> smalls_done_when_big_finished{0};
  EventSink big_sink = [&](TokenEvent&& ev) {
    if (ev.final) {
      std::lock_guard<std::mutex> lock(small_c.mu);
      smalls_done_when_big_finished = small_c.finals;
    }
    big_c.sink()(std::move(ev));
  };
  ASSERT_TRUE(f.service->submit({f.request("big", 240)}, big_sink).accepted());  // all 16 blocks
  gate.release();
  ASSERT_TRUE(big_c.wait(1, 120));
  ASSERT_TRUE(small_c.wait(60, 120));
  // Overtaking is bounded (max_skips 4 rounds of at most 8 small ones): the big
  // request ran long before the 60 small ones were through.
  EXPECT_LT(smalls_done_when_big_finished.load(), 45u);
}

// Items of one tenant's list, counted as their finals arrive; `seen` records how
// many of `other`'s items had finished when each of these did.
struct FinalCounter {
  std::mutex mu;
  std::condition_variable cv;
  size_t finals = 0;
  std::vector<size_t> seen;  // other's finals at each of ours
  const FinalCounter* other = nullptr;
  EventSink sink() {
    return [this](TokenEvent&& ev) {
      if (!ev.final) return;
      std::lock_guard<std::mutex> lock(mu);
      ++finals;
      seen.push_back(other ? other->finals : 0);  // (other's count read unlocked: only ordered by the engine thread)
      cv.notify_all();
    };
  }
  bool wait(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(120), [&] { return finals >= n; });
  }
};

GenerationRequest of_tenant(GenerationRequest r, int32_t tenant) {
  r.tenant = tenant;
  return r;
}

TEST(EngineService, AnotherTenantsRequestDoesNotQueueBehindAListAlreadyRunning) {
  // 16 blocks: 5 of the list's items (3 blocks each) run at once, the rest wait.
  Fixture f(16, 64, 16, 64, 1 << 20, nullptr, 0, nullptr,
            TenantTable{{"default"}, {"batch"}, {"interactive"}});
  FinalCounter list, one;
  one.other = &list;
  std::vector<GenerationRequest> items;
  for (int i = 0; i < 120; ++i) items.push_back(of_tenant(f.request("s", 30), 1));
  ASSERT_TRUE(f.service->submit(items, list.sink()).accepted());
  ASSERT_TRUE(list.wait(2));  // the list is running, its waiting line full
  // 2 blocks: more than the list leaves free, so it waits for a wave of the list to end.
  ASSERT_TRUE(f.service->submit({of_tenant(f.request("s", 20), 2)}, one.sink()).accepted());
  ASSERT_TRUE(one.wait(1));
  // It starts when the next wave ends (first in came FIFO: behind the ~32 items in line, ~6 waves of 5).
  EXPECT_LE(one.seen[0], 15u) << "list items finished before the other tenant's one request";
  ASSERT_TRUE(list.wait(120));
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

TEST(EngineService, TenantsShareTheEngineByWeight) {
  for (const double heavy : {1.0, 3.0}) {
    // 64 blocks, 16 sequences a step: the 16 slots bind (each item holds 3 blocks).
    Fixture f(64, 64, 16, 64, 1 << 20, nullptr, 0, nullptr, TenantTable{{"default"}, {"a", heavy}, {"b", 1.0}});
    FinalCounter a, b;
    a.other = &b;
    std::vector<GenerationRequest> as, bs;
    for (int i = 0; i < 100; ++i) as.push_back(of_tenant(f.request("s", 30), 1));
    for (int i = 0; i < 100; ++i) bs.push_back(of_tenant(f.request("s", 30), 2));
    ASSERT_TRUE(f.service->submit(as, a.sink()).accepted());
    ASSERT_TRUE(f.service->submit(bs, b.sink()).accepted());
    ASSERT_TRUE(a.wait(100));
    ASSERT_TRUE(b.wait(100));
    // While both have work (a's finals 20 to 60): b finishes 1 / heavy of what a does.
    const double ratio = static_cast<double>(a.seen[59] - a.seen[19]) / 40.0;
    std::string trace;
    for (size_t v : a.seen) trace += std::to_string(v) + " ";
    EXPECT_NEAR(ratio, 1.0 / heavy, 0.15) << "weight " << heavy << ": b's finals at each of a's: " << trace;
    EXPECT_EQ(f.pool->used_blocks(), 0);
  }
}

TEST(EngineService, ATenantsCapsHoldWhileItIsAlone) {
  struct Case {
    int64_t max_sequences;
    double max_kv_share;
    int64_t most_running, most_blocks;
  };
  // 64 blocks, items of 3 blocks: a share of 0.25 is 16 blocks, 5 items.
  for (const Case c : {Case{2, 0.0, 2, 6}, Case{0, 0.25, 5, 16}}) {
    Fixture f(64, 64, 16, 64, 1 << 20, nullptr, 0, nullptr,
              TenantTable{{"default"}, {"capped", 1.0, c.max_sequences, c.max_kv_share}});
    Collector col;
    int64_t running = 0, blocks = 0;
    EventSink sink = [&](TokenEvent&& ev) {  // on the engine thread: the figures of the step before
      const ServiceStats st = f.service->stats();
      running = std::max(running, st.tenants[1].running);
      blocks = std::max(blocks, st.tenants[1].kv_blocks);
      col.sink()(std::move(ev));
    };
    std::vector<GenerationRequest> items;
    for (int i = 0; i < 20; ++i) items.push_back(of_tenant(f.request("s", 30), 1));
    ASSERT_TRUE(f.service->submit(items, sink).accepted());
    ASSERT_TRUE(col.wait(20));
    EXPECT_EQ(running, c.most_running) << "max_sequences " << c.max_sequences << " share " << c.max_kv_share;
    EXPECT_LE(blocks, c.most_blocks);
    // Served: prompt (3) + 29 fed back per item, counted after the step that sent the finals: waited for.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (f.service->stats().tenants[1].served_tokens < 20 * 32 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(f.service->stats().tenants[1].served_tokens, 20 * 32);
  }
}

TEST(EngineService, ATenantUnderItsShareTakesItBackAndThePreemptedAnswersAreUnchanged) {
  // 16 blocks: a's items (prompt + 200 tokens) hold most of them; b's 40 need more than are free.
  Fixture f(16, 64, 16, 64, 1 << 20, nullptr, 0, nullptr, TenantTable{{"default"}, {"a"}, {"b"}});
  Collector a;
  FinalCounter b, a_finals;
  b.other = &a_finals;
  std::vector<GenerationRequest> as;
  for (int i = 0; i < 6; ++i) as.push_back(of_tenant(f.request(prompt(i), 200), 1));
  EventSink a_sink = [&](TokenEvent&& ev) {
    if (ev.final) a_finals.sink()(TokenEvent{ev});
    a.sink()(std::move(ev));
  };
  ASSERT_TRUE(f.service->submit(as, a_sink).accepted());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  const auto pool_full = [&] {  // a's first items run, the rest wait for blocks
    const ServiceStats st = f.service->stats();
    return !st.tenants.empty() && st.tenants[1].running > 0 && st.tenants[1].waiting > 0 &&
           st.kv_blocks_used + 4 > st.kv_blocks_total;
  };
  while (!pool_full() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(pool_full());
  ASSERT_TRUE(f.service->submit({of_tenant(f.request("b's", 40), 2)}, b.sink()).accepted());
  ASSERT_TRUE(b.wait(1));
  EXPECT_LE(b.seen[0], 0u) << "b waited for a's sequences to end instead of taking its share back";
  ASSERT_TRUE(a.wait(6, 120));
  for (size_t i = 0; i < as.size(); ++i) {
    EXPECT_EQ(a.ids(i), f.reference(as[i])) << "item " << i << " (greedy, f32 KV): preempted or not, the same";
  }
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while ((f.service->stats().preemptions_total == 0 || f.service->stats().recomputed_tokens_total == 0) &&
         std::chrono::steady_clock::now() < settled) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(f.service->stats().preemptions_total, 1);
  EXPECT_GT(f.service->stats().recomputed_tokens_total, 0) << "blocks were short: the preempted gave them back";
  EXPECT_EQ(f.service->stats().tenants[1].preemptions, f.service->stats().preemptions_total);
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

// Waits (30 s at most) until `tenant` runs `n` sequences; false if it never does.
bool tenant_runs(Fixture& f, size_t tenant, int64_t n) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    const ServiceStats st = f.service->stats();
    if (st.tenants.size() > tenant && st.tenants[tenant].running >= n) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

TEST(EngineService, ATenantUnderItsShareOfSlotsTakesOneBack) {
  // 64 blocks, 4 sequences a step: a's items take every slot, not every block.
  Fixture f(64, 64, 4, 64, 1 << 20, nullptr, 0, nullptr, TenantTable{{"default"}, {"a"}, {"b"}});
  FinalCounter a, b;
  b.other = &a;
  std::vector<GenerationRequest> as;
  for (int i = 0; i < 12; ++i) as.push_back(of_tenant(f.request(prompt(i), 200), 1));
  ASSERT_TRUE(f.service->submit(as, a.sink()).accepted());
  ASSERT_TRUE(tenant_runs(f, 1, 4)) << "a never took every slot";
  ASSERT_TRUE(f.service->submit({of_tenant(f.request("b's", 20), 2)}, b.sink()).accepted());
  ASSERT_TRUE(b.wait(1));
  EXPECT_EQ(b.seen[0], 0u) << "b waited for a slot instead of taking its share back";
  ASSERT_TRUE(a.wait(12));
}

TEST(EngineService, APreemptionForASlotAloneKeepsTheBlocksAndTheAnswersAreUnchanged) {
  // 64 blocks, 4 sequences a step: a's items take every slot and 4 x 14 blocks; b takes a slot back.
  Fixture f(64, 64, 4, 64, 1 << 20, nullptr, 0, nullptr, TenantTable{{"default"}, {"a"}, {"b"}});
  Collector a;
  FinalCounter b;
  std::vector<GenerationRequest> as;
  for (int i = 0; i < 6; ++i) as.push_back(of_tenant(f.request(prompt(i), 200), 1));
  ASSERT_TRUE(f.service->submit(as, a.sink()).accepted());
  ASSERT_TRUE(tenant_runs(f, 1, 4)) << "a never took every slot";
  ASSERT_TRUE(f.service->submit({of_tenant(f.request("b's", 8), 2)}, b.sink()).accepted());
  ASSERT_TRUE(b.wait(1));
  ASSERT_TRUE(a.wait(6, 120));
  for (size_t i = 0; i < as.size(); ++i) {
    EXPECT_EQ(a.ids(i), f.reference(as[i])) << "item " << i << " (greedy, f32 KV): preempted or not, the same";
  }
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (f.service->stats().preemptions_total == 0 && std::chrono::steady_clock::now() < settled) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(f.service->stats().preemptions_total, 1);
  EXPECT_EQ(f.service->stats().recomputed_tokens_total, 0) << "the pool had room: the preempted kept their blocks";
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

// `n` prompt ids, distinct for each `i` from the first block on (no prefix-cache hits between items).
std::vector<int32_t> long_prompt(Fixture& f, int i, size_t n) {
  std::vector<int32_t> ids = f.tokenizer->encode(prompt(i) + " " + prompt(i * 7 + 3), true);
  const std::vector<int32_t> fill = f.tokenizer->encode("once upon a time there was a story", false);
  while (ids.size() < n) ids.push_back(fill[ids.size() % fill.size()]);
  ids.resize(n);
  return ids;
}

TEST(EngineService, TenantsOfEqualWeightAreServedAlikeWhateverTheirRequestsShapes) {
  // 8 sequences and 64 tokens a step. a: short prompts, long outputs (1 token a step each);
  // b: long prompts, short outputs (a whole step's budget in a few sequences).
  Fixture f(256, 64, 8, 512, 1 << 22, nullptr, 0, nullptr, TenantTable{{"default"}, {"a"}, {"b"}});
  Collector a, b;
  std::vector<GenerationRequest> as, bs;
  for (int i = 0; i < 150; ++i) as.push_back(of_tenant(f.request(prompt(i), 120), 1));
  for (int i = 0; i < 100; ++i) {
    GenerationRequest r = f.request("", 4);
    r.prompt_ids = long_prompt(f, i, 200);
    bs.push_back(of_tenant(std::move(r), 2));
  }
  ASSERT_TRUE(f.service->submit(as, a.sink()).accepted());
  ASSERT_TRUE(f.service->submit(bs, b.sink()).accepted());
  // Tokens served to each, sampled twice while both still have work waiting.
  const auto served_at = [&](int64_t total) -> std::optional<std::pair<int64_t, int64_t>> {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (std::chrono::steady_clock::now() < deadline) {
      const ServiceStats st = f.service->stats();
      if (st.tenants.size() == 3 && st.tenants[1].served_tokens + st.tenants[2].served_tokens >= total) {
        if (st.tenants[1].waiting == 0 || st.tenants[2].waiting == 0) return std::nullopt;
        return std::make_pair(st.tenants[1].served_tokens, st.tenants[2].served_tokens);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return std::nullopt;
  };
  const auto start = served_at(2000);
  const auto end = served_at(16000);
  ASSERT_TRUE(start && end) << "a tenant ran out of waiting work inside the window";
  const double a_tokens = static_cast<double>(end->first - start->first);
  const double b_tokens = static_cast<double>(end->second - start->second);
  EXPECT_NEAR(a_tokens / b_tokens, 1.0, 0.1) << "a " << a_tokens << " b " << b_tokens << " tokens";
  ASSERT_TRUE(a.wait(150, 120));
  ASSERT_TRUE(b.wait(100, 120));
  EXPECT_EQ(f.pool->used_blocks(), 0);
}

GenerationRequest with_priority(GenerationRequest r, int32_t priority) {
  r.priority = priority;
  return r;
}

TEST(EngineService, WithinATenantALowerPriorityPreemptsAHigherOneWhoseAnswersAreUnchanged) {
  // One tenant. 16 blocks: the batch's items (priority 1) hold most of them; the interactive one
  // (priority 0) needs more than are free.
  Fixture f(16, 64, 16);
  Collector batch;
  FinalCounter one, batch_finals;
  one.other = &batch_finals;
  std::vector<GenerationRequest> items;
  for (int i = 0; i < 4; ++i) items.push_back(with_priority(f.request(prompt(i), 200), 1));
  EventSink batch_sink = [&](TokenEvent&& ev) {
    if (ev.final) batch_finals.sink()(TokenEvent{ev});
    batch.sink()(std::move(ev));
  };
  ASSERT_TRUE(f.service->submit(items, batch_sink).accepted());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (f.service->stats().running_requests == 0 || f.service->stats().queued_requests == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::yield();
  }
  const GenerationRequest interactive = f.request("now", 40);
  ASSERT_TRUE(f.service->submit({interactive}, one.sink()).accepted());
  ASSERT_TRUE(one.wait(1));
  EXPECT_EQ(one.seen[0], 0u) << "the interactive request waited for the batch";
  ASSERT_TRUE(batch.wait(4, 120));
  for (size_t i = 0; i < items.size(); ++i) EXPECT_EQ(batch.ids(i), f.reference(items[i])) << "item " << i;
  const auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (f.service->stats().preemptions_total == 0 && std::chrono::steady_clock::now() < settled) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(f.service->stats().preemptions_total, 1);
}

TEST(EngineService, ShutdownAbortsWhatIsLeftWithAnErrorEvent) {
  Fixture f(64);
  Collector c;
  ASSERT_TRUE(f.service->submit({f.request("x", 200)}, c.sink()).accepted());
  f.service->shutdown(0.0);
  ASSERT_TRUE(c.wait(1, 10));
  std::lock_guard<std::mutex> lock(c.mu);
  ASSERT_TRUE(c.events[0].back().error.has_value());
  EXPECT_EQ(c.events[0].back().error->code, ErrorCode::kUnavailable);
  Collector d;
  auto r = f.service->submit({f.request("y", 1)}, d.sink());
  ASSERT_FALSE(r.accepted());
  EXPECT_EQ(r.rejection->error.code, ErrorCode::kUnavailable);
}

TEST(EngineService, RequestMemoryIsChargedAtSubmitAndGivenBackWhenTheAnswerIsDropped) {
  Fixture f(64, 64, 16, 64, 1 << 20, nullptr, /*request_budget_bytes=*/2 << 20);
  GenerationRequest huge = f.request("hello", 240);
  huge.token_records = true;
  huge.top_n_tokens = 5;
  CostModel m;
  m.token_text_bytes = f.tokenizer->max_token_bytes();
  m.sequence_slots = 48;
  const int64_t one = submission_cost({huge}, m).total();  // 240 x 6 records of ~1 KiB
  ASSERT_LT(one, 2 << 20);
  ASSERT_GT(2 * one, 2 << 20);
  std::vector<GenerationRequest> many(8, huge);
  Collector c0;
  auto never = f.service->submit(many, c0.sink());
  ASSERT_FALSE(never.accepted());
  EXPECT_EQ(never.rejection->error.code, ErrorCode::kOutOfMemory);
  EXPECT_NE(never.rejection->error.message.find("bytes of request memory ("), std::string::npos)
      << never.rejection->error.message;
  EXPECT_NE(never.rejection->error.message.find("the plan has 2097152 bytes"), std::string::npos)
      << never.rejection->error.message;
  // One such item fits; while its answer is held, a second does not (429), after it does.
  Collector c1;
  SubmitResult first = f.service->submit({huge}, c1.sink());
  ASSERT_TRUE(first.accepted()) << first.rejection->error.message;
  ASSERT_NE(first.charge, nullptr);
  ASSERT_TRUE(c1.wait(1));
  Collector c2;
  auto second = f.service->submit({huge}, c2.sink());
  ASSERT_FALSE(second.accepted());
  EXPECT_EQ(second.rejection->error.code, ErrorCode::kOverloaded);
  // The engine drops its share when the submission leaves the scheduler; the
  // caller's share goes with its answer. Wait for the engine's, then drop ours.
  first.charge.reset();
  bool accepted = false;
  for (int i = 0; i < 500 && !accepted; ++i) {  // up to 5 s for the engine to let go
    accepted = f.service->submit({huge}, c2.sink()).accepted();
    if (!accepted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(accepted);
  EXPECT_TRUE(c2.wait(1));
}

// log softmax(logits)[id], the reference's way.
double log_softmax_at(const std::vector<float>& logits, int32_t id) {
  const float m = *std::max_element(logits.begin(), logits.end());
  double z = 0;
  for (float l : logits) z += std::exp(static_cast<double>(l - m));
  return logits[static_cast<size_t>(id)] - m - std::log(z);
}

// Prompt logprobs (TGI decoder_input_details, OpenAI echo + logprobs) come on
// the first event, computed over a prefill in chunks (step_tokens 16 < the
// prompt), equal to the reference's log-softmax; OpenAI's raw logprobs of the
// generated tokens are the model's too, and alternatives come most likely first.
TEST(EngineService, PromptLogprobsAndRawLogprobsEqualTheReference) {
  Fixture f(64, /*step_tokens=*/16, /*step_seqs=*/4);
  GenerationRequest r = f.request("a prompt long enough to take three prefill chunks of sixteen", 3);
  ASSERT_GT(r.prompt_ids.size(), 32u);
  r.prompt_details = true;
  r.prompt_top_n = 2;
  r.raw_logprobs = true;
  r.top_n_tokens = 2;
  r.params.do_sample = true;  // raw logprobs do not depend on the sampler's warping
  r.params.temperature = 0.7f;
  r.params.seed = 5;
  Collector c;
  ASSERT_TRUE(f.service->submit({r}, c.sink()).accepted());
  ASSERT_TRUE(c.wait(1));
  std::lock_guard<std::mutex> lock(c.mu);
  const std::vector<TokenEvent>& events = c.events[0];
  ASSERT_EQ(events.size(), 3u);
  const TokenEvent& first = events[0];
  ASSERT_EQ(first.prefill.size(), r.prompt_ids.size());
  ASSERT_EQ(first.prefill_top.size(), r.prompt_ids.size());
  EXPECT_TRUE(events[1].prefill.empty());  // sent once
  EXPECT_TRUE(std::isnan(first.prefill[0].logprob));
  EXPECT_TRUE(first.prefill_top[0].empty());
  DecoderReference ref(config(), std::move(bind_decoder_weights(config(), f.model.tensors)).value());
  ReferenceKvCache cache(config(), 256);
  std::vector<float> logits(400);
  std::vector<int32_t> all = r.prompt_ids;
  for (const TokenEvent& e : events) all.push_back(e.token.id);
  double sum = 0;
  for (size_t p = 0; p + 1 < all.size(); ++p) {
    ref.forward(all[p], static_cast<int64_t>(p), cache, logits.data());
    const int32_t argmax = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    const bool in_prompt = p + 1 < r.prompt_ids.size();
    const TokenInfo& got = in_prompt ? first.prefill[p + 1] : events[p + 1 - r.prompt_ids.size()].token;
    const std::vector<TokenInfo>& top = in_prompt ? first.prefill_top[p + 1] : events[p + 1 - r.prompt_ids.size()].top_tokens;
    EXPECT_EQ(got.id, all[p + 1]);
    EXPECT_NEAR(got.logprob, log_softmax_at(logits, all[p + 1]), 1e-3) << p;
    ASSERT_EQ(top.size(), 2u);
    EXPECT_EQ(top[0].id, argmax) << p;
    EXPECT_GE(top[0].logprob, top[1].logprob);
    if (!in_prompt) sum += got.logprob;
  }
  EXPECT_NEAR(events.back().logprob_sum, sum, 1e-3);
}

}  // namespace
}  // namespace plimsoll::sched
