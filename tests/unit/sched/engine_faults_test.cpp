// Faults on the engine thread are contained: an exception (std::bad_alloc
// included) while scheduling, queueing an item, stepping, sampling, detokenizing or
// delivering an event ends only the requests it hit, with an internal error
// event; their KV blocks and admission slots return; the service goes on.
// Faults are injected through EngineServiceConfig::fault_hook and a tokenizer
// that throws on a chosen call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include "convert/random_model.h"
#include "sched/engine_service.h"

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

// The llama tokenizer, except that the n-th piece it renders (counted from arm())
// throws std::bad_alloc: detokenizing fails as it would when memory runs out.
class ThrowingTokenizer final : public TextTokenizer {
 public:
  explicit ThrowingTokenizer(const TextTokenizer& inner) : inner_(inner) {}
  void arm(int calls_before_throw) { countdown_ = calls_before_throw; }

  std::vector<int32_t> encode(std::string_view text, bool add_special) const override {
    return inner_.encode(text, add_special);
  }
  std::vector<int32_t> encode_prompt(std::string_view text, bool add_special, bool parse_special) const override {
    return inner_.encode_prompt(text, add_special, parse_special);
  }
  bool add_special_by_default() const override { return inner_.add_special_by_default(); }
  std::string decode_raw(std::span<const int32_t> ids) const override { return inner_.decode_raw(ids); }
  void append_piece_text(int32_t prev_id, int32_t id, std::string* out) const override {
    if (countdown_.fetch_sub(1) == 0) throw std::bad_alloc();
    inner_.append_piece_text(prev_id, id, out);
  }
  std::string_view token(int32_t id) const override { return inner_.token(id); }
  int64_t max_token_bytes() const override { return inner_.max_token_bytes(); }
  int64_t vocab_size() const override { return inner_.vocab_size(); }
  int32_t bos_id() const override { return inner_.bos_id(); }
  int32_t eos_id() const override { return inner_.eos_id(); }
  bool is_special(int32_t id) const override { return inner_.is_special(id); }
  bool cleans_up_tokenization_spaces() const override { return inner_.cleans_up_tokenization_spaces(); }

 private:
  const TextTokenizer& inner_;
  mutable std::atomic<int64_t> countdown_{-1};  // < 0: never throws
};

// Events of one submission, by item; waits for its finals.
struct Events {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, std::vector<TokenEvent>> by_item;
  size_t finals = 0;
  EventSink sink() {
    return [this](TokenEvent&& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (ev.final) ++finals;
      by_item[ev.index].push_back(std::move(ev));
      cv.notify_all();
    };
  }
  bool wait(size_t n, int seconds = 60) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(seconds), [&] { return finals >= n; });
  }
  TokenEvent last(size_t item) {
    std::lock_guard<std::mutex> lock(mu);
    return by_item[item].back();
  }
  size_t tokens(size_t item) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (const TokenEvent& e : by_item[item]) n += e.token.id >= 0 ? 1 : 0;
    return n;
  }
};

struct FaultFixture {
  LoadedModel model;
  std::unique_ptr<Tokenizer> llama;
  std::unique_ptr<ThrowingTokenizer> tokenizer;
  std::unique_ptr<ThreadPool> threads;
  std::unique_ptr<EngineService> service;
  KvBlockPool* pool = nullptr;

  FaultFixture(FaultHook hook, int64_t step_seqs = 16, int64_t max_concurrent = 2) {
    model = std::move(random_llama_in_memory(config(), DType::kF32, 21)).value();
    llama = std::make_unique<Tokenizer>(std::move(Tokenizer::create(*model.vocab)).value());
    tokenizer = std::make_unique<ThrowingTokenizer>(*llama);
    threads = std::make_unique<ThreadPool>(2);
    auto p = std::move(KvBlockPool::create(config(), 64, 16)).value();
    pool = p.get();
    auto w = std::move(bind_decoder_weights(config(), model.tensors)).value();
    auto engine = std::move(BatchEngine::create(config(), w, *p, BatchEngine::workspace_sizes(config(), 64, step_seqs, 2, 256),
                                                threads.get())).value();
    EngineServiceConfig sc;
    sc.limits.max_total_tokens = 256;
    sc.limits.max_input_tokens = 255;
    sc.limits.max_concurrent_requests = max_concurrent;
    sc.limits.max_queued_tokens = 1 << 20;
    sc.scheduler.step_tokens = 64;
    sc.scheduler.step_seqs = step_seqs;
    sc.fault_hook = std::move(hook);
    service = std::make_unique<EngineService>(sc, std::move(engine), std::move(p), *tokenizer);
  }

  GenerationRequest request(const std::string& prompt, int64_t max_new) {
    GenerationRequest r;
    r.prompt_ids = llama->encode(prompt, true);
    r.params.max_new_tokens = max_new;
    r.params.ignore_eos = true;
    return r;
  }

  // A submission's slot is released just after its last final event reached the sink,
  // so a client that heard back may still meet 429 for a moment: retry until a deadline.
  SubmitResult submit_within(std::vector<GenerationRequest> items, EventSink sink, int seconds = 30) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    for (;;) {
      SubmitResult r = service->submit(items, sink);
      if (r.accepted() || r.rejection->error.code != ErrorCode::kOverloaded ||
          std::chrono::steady_clock::now() > deadline) {
        return r;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // stats() is refreshed after each step, after that step's events went out.
  int64_t faults_within(int64_t want, int seconds = 30) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (service->stats().engine_faults_total < want && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return service->stats().engine_faults_total;
  }

  // After faults: every block is back, the slots are free and the service still answers.
  void expect_recovered(int64_t faults) {
    EXPECT_EQ(faults_within(faults), faults);
    EXPECT_EQ(pool->used_blocks(), 0);
    Events a, b;  // both slots (max_concurrent 2) are free again
    ASSERT_TRUE(submit_within({request("after the fault", 6)}, a.sink()).accepted());
    ASSERT_TRUE(submit_within({request("and another", 6)}, b.sink()).accepted());
    ASSERT_TRUE(a.wait(1));
    ASSERT_TRUE(b.wait(1));
    EXPECT_FALSE(a.last(0).error.has_value());
    EXPECT_EQ(a.tokens(0), 6u);
    EXPECT_EQ(b.tokens(0), 6u);
    EXPECT_EQ(pool->used_blocks(), 0);
  }
};

void expect_internal_error(const TokenEvent& ev, const std::string& what) {
  EXPECT_TRUE(ev.final);
  ASSERT_TRUE(ev.error.has_value());
  EXPECT_EQ(ev.error->code, ErrorCode::kInternal);
  EXPECT_NE(ev.error->message.find(what), std::string::npos) << ev.error->message;
}

TEST(EngineFaults, BadAllocWhileDetokenizingEndsOnlyThatSequence) {
  FaultFixture f(nullptr);
  Events a, b;
  f.tokenizer->arm(5);  // the 6th piece rendered, while both sequences decode
  ASSERT_TRUE(f.service->submit({f.request("first story", 20)}, a.sink()).accepted());
  ASSERT_TRUE(f.service->submit({f.request("second story", 20)}, b.sink()).accepted());
  ASSERT_TRUE(a.wait(1));
  ASSERT_TRUE(b.wait(1));
  const bool a_failed = a.last(0).error.has_value();
  Events& failed = a_failed ? a : b;
  Events& served = a_failed ? b : a;
  expect_internal_error(failed.last(0), "std::bad_alloc");
  EXPECT_LT(failed.tokens(0), 20u);
  EXPECT_FALSE(served.last(0).error.has_value());
  EXPECT_EQ(served.tokens(0), 20u);
  EXPECT_EQ(served.last(0).finish_reason, FinishReason::kLength);
  f.expect_recovered(1);
}

TEST(EngineFaults, AStepThatThrowsEndsItsSequencesAndTheQueueGoesOn) {
  std::atomic<bool> armed{false};
  // One sequence per step: the second request waits while the first one's step fails.
  FaultFixture f([&](FaultSite site, uint64_t) {
    if (site == FaultSite::kStep && armed.exchange(false)) throw std::bad_alloc();
  }, /*step_seqs=*/1);
  Events a, b;
  EventSink a_sink = a.sink();
  ASSERT_TRUE(f.service->submit({f.request("the first", 30)}, [&](TokenEvent&& ev) {
    if (!ev.final) armed = true;  // its first token is out: fail its next step
    a_sink(std::move(ev));
  }).accepted());
  ASSERT_TRUE(f.service->submit({f.request("the second", 10)}, b.sink()).accepted());
  ASSERT_TRUE(a.wait(1));
  ASSERT_TRUE(b.wait(1));
  expect_internal_error(a.last(0), "std::bad_alloc");
  EXPECT_EQ(a.tokens(0), 1u);
  EXPECT_FALSE(b.last(0).error.has_value());
  EXPECT_EQ(b.tokens(0), 10u);
  f.expect_recovered(1);
}

TEST(EngineFaults, SamplingFaultOfOneRequestLeavesTheOtherInTheSameStep) {
  // Tickets count from 1 in a new service: the first submission is the one that fails.
  FaultFixture f([](FaultSite site, uint64_t ticket) {
    if (site == FaultSite::kSample && ticket == 1) throw std::runtime_error("sampler exploded");
  });
  Events a, b;
  ASSERT_EQ(f.service->submit({f.request("one", 12)}, a.sink()).ticket, 1u);
  ASSERT_TRUE(f.service->submit({f.request("two", 12)}, b.sink()).accepted());
  ASSERT_TRUE(a.wait(1));
  ASSERT_TRUE(b.wait(1));
  expect_internal_error(a.last(0), "sampler exploded");
  EXPECT_EQ(a.tokens(0), 0u);
  EXPECT_EQ(b.tokens(0), 12u);
  f.expect_recovered(1);
}

TEST(EngineFaults, AFaultQueueingOneItemOfAClientBatchEndsOnlyThatItem) {
  std::atomic<int> queued{0};
  FaultFixture f([&](FaultSite site, uint64_t) {
    if (site == FaultSite::kQueueItem && queued++ == 1) throw std::bad_alloc();
  });
  Events c;
  ASSERT_TRUE(f.service->submit({f.request("a", 5), f.request("b", 5), f.request("c", 5)}, c.sink()).accepted());
  ASSERT_TRUE(c.wait(3));
  EXPECT_FALSE(c.last(0).error.has_value());
  expect_internal_error(c.last(1), "std::bad_alloc");
  EXPECT_FALSE(c.last(2).error.has_value());
  EXPECT_EQ(c.tokens(0), 5u);
  EXPECT_EQ(c.tokens(2), 5u);
  f.expect_recovered(1);
}

TEST(EngineFaults, AFaultBeforeAnyPlanEndsWhatIsQueuedAndTheServiceGoesOn) {
  std::atomic<bool> armed{true};
  FaultFixture f([&](FaultSite site, uint64_t) {
    if (site == FaultSite::kSchedule && armed.exchange(false)) throw std::logic_error("scheduler bug");
  });
  Events a;
  ASSERT_TRUE(f.service->submit({f.request("lost", 8)}, a.sink()).accepted());
  ASSERT_TRUE(a.wait(1));
  expect_internal_error(a.last(0), "scheduler bug");
  f.expect_recovered(1);
}

TEST(EngineFaults, ASinkThatThrowsEndsItsRequestAndReleasesItsSlot) {
  FaultFixture f(nullptr, 16, /*max_concurrent=*/2);
  Events a;
  EventSink a_sink = a.sink();
  std::atomic<int> calls{0};
  ASSERT_TRUE(f.service->submit({f.request("a reader out of memory", 20)}, [&](TokenEvent&& ev) {
    const bool first = calls++ == 0;
    a_sink(std::move(ev));
    if (first) throw std::bad_alloc();  // the HTTP side could not queue this token
  }).accepted());
  ASSERT_TRUE(a.wait(1));
  expect_internal_error(a.last(0), "std::bad_alloc");
  EXPECT_EQ(a.tokens(0), 1u);
  f.expect_recovered(1);
}

}  // namespace
}  // namespace plimsoll::sched
