// Prefix caching end to end on a small random model with f32 KV: greedy
// answers are the same with the cache and without it, whatever the prompts
// share (nothing, part of a block, k blocks, the whole prompt, a previous
// answer); the tokens found are not computed again; a burst with one new
// prefix computes it once; shared blocks are charged once and are not
// reused while a sequence holds them; cached blocks never cause a refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>

#include "convert/random_model.h"
#include "model/decoder_reference.h"
#include "model/decoder_weights.h"
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

constexpr int64_t kBlock = 16;

struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, std::vector<int32_t>> ids;  // by item index
  std::vector<size_t> final_order;
  EventSink sink() {
    return [this](TokenEvent&& ev) {
      std::lock_guard<std::mutex> lock(mu);
      EXPECT_FALSE(ev.error.has_value()) << ev.error->message;
      if (ev.token.id >= 0) ids[ev.index].push_back(ev.token.id);
      if (ev.final) final_order.push_back(ev.index);
      cv.notify_all();
    };
  }
  bool wait(size_t n, int seconds = 60) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(seconds), [&] { return final_order.size() >= n; });
  }
};

// One model, served by an engine whose pool has prefix caching on or off.
struct Server {
  std::unique_ptr<ThreadPool> threads;
  std::unique_ptr<EngineService> service;
  KvBlockPool* pool = nullptr;

  Server(const LoadedModel& model, const TextTokenizer& tokenizer, bool caching, int64_t kv_blocks,
         int64_t step_tokens = 32, TenantTable tenants = {}, bool across_tenants = false) {
    threads = std::make_unique<ThreadPool>(2);
    auto p = std::move(KvBlockPool::create(config(), kv_blocks, kBlock, DType::kF32, caching)).value();
    pool = p.get();
    auto w = std::move(bind_decoder_weights(config(), model.tensors)).value();
    auto engine = std::move(BatchEngine::create(config(), w, *p,
                                                BatchEngine::workspace_sizes(config(), step_tokens, 8, 2, 256),
                                                threads.get()))
                      .value();
    EXPECT_TRUE(engine->warm_up().ok());
    EngineServiceConfig sc;
    sc.limits.max_total_tokens = 256;
    sc.limits.max_input_tokens = 255;
    sc.limits.max_concurrent_requests = 64;
    sc.limits.max_queued_tokens = 1 << 20;
    sc.scheduler.step_tokens = step_tokens;
    sc.scheduler.step_seqs = 8;
    sc.scheduler.max_skips = 4;
    sc.scheduler.tenants = std::move(tenants);
    sc.scheduler.prefix_cache_across_tenants = across_tenants;
    service = std::make_unique<EngineService>(sc, std::move(engine), std::move(p), tokenizer);
  }

  // Runs one submission to the end; the generated ids per item.
  std::vector<std::vector<int32_t>> run(const std::vector<GenerationRequest>& items) {
    Collector c;
    EXPECT_TRUE(service->submit(items, c.sink()).accepted());
    EXPECT_TRUE(c.wait(items.size()));
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < items.size(); ++i) out.push_back(c.ids[i]);
    return out;
  }
  std::vector<int32_t> run(const GenerationRequest& r) { return run(std::vector{r})[0]; }
};

GenerationRequest request(std::vector<int32_t> prompt, int64_t max_new) {
  GenerationRequest r;
  r.prompt_ids = std::move(prompt);
  r.params.max_new_tokens = max_new;
  r.params.ignore_eos = true;
  return r;
}

// n pseudo-random ids from `seed`, inside the vocabulary.
std::vector<int32_t> ids(int seed, int64_t n) {
  std::vector<int32_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<int32_t>(3 + (seed * 7919 + i * 104729) % 397));
  return out;
}

std::vector<int32_t> cat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<int32_t> head(const std::vector<int32_t>& v, int64_t n) { return {v.begin(), v.begin() + n}; }

struct PrefixCacheTest : ::testing::Test {
  LoadedModel model = std::move(random_llama_in_memory(config(), DType::kF32, 21)).value();
  std::unique_ptr<Tokenizer> tokenizer = std::make_unique<Tokenizer>(std::move(Tokenizer::create(*model.vocab)).value());

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

TEST_F(PrefixCacheTest, GreedyAnswersAreTheSameWithAndWithoutTheCacheWhateverThePromptsShare) {
  Server on(model, *tokenizer, true, 64), off(model, *tokenizer, false, 64);
  const std::vector<int32_t> base = ids(1, 3 * kBlock);  // three full blocks
  const GenerationRequest first = request(cat(base, ids(2, 12)), 20);  // 60 tokens
  const std::vector<int32_t> first_answer = on.run(first);
  EXPECT_EQ(first_answer, off.run(first));
  EXPECT_EQ(first_answer, reference(first));

  struct Case {
    const char* what;
    GenerationRequest r;
    int64_t hit_tokens;  // prompt tokens the cache must supply
  };
  const std::vector<Case> cases = {
      {"shares nothing", request(ids(3, 60), 12), 0},
      {"shares part of one block", request(cat(head(base, 10), ids(4, 40)), 12), 0},
      {"shares exactly two blocks", request(cat(head(base, 2 * kBlock), ids(5, 20)), 12), 2 * kBlock},
      {"shares two blocks and part of the third", request(cat(head(base, 2 * kBlock + 5), ids(6, 20)), 12), 2 * kBlock},
      {"is the whole earlier prompt", first, 3 * kBlock},
      // A prompt of exactly three cached blocks: its last token is computed for its logits,
      // so the third block is computed into a block of its own.
      {"is exactly three cached blocks", request(base, 12), 2 * kBlock},
      // The next turn of a chat: the earlier prompt, its answer, more. The answer's
      // full written blocks were cached too: 60 + 19 written = 79 tokens = 4 blocks.
      {"extends the earlier prompt and answer", request(cat(cat(first.prompt_ids, first_answer), ids(7, 6)), 12),
       4 * kBlock},
  };
  for (const Case& c : cases) {
    const ServiceStats before = on.service->stats();
    const std::vector<int32_t> got = on.run(c.r);
    const ServiceStats after = on.service->stats();
    EXPECT_EQ(got, off.run(c.r)) << c.what;
    EXPECT_EQ(after.prefix_cache_hit_tokens - before.prefix_cache_hit_tokens, c.hit_tokens) << c.what;
    EXPECT_EQ(after.prefix_cache_queried_tokens - before.prefix_cache_queried_tokens,
              static_cast<int64_t>(c.r.prompt_ids.size()))
        << c.what;
  }
  EXPECT_EQ(reference(cases.back().r), on.run(cases.back().r));
  // Nothing is in use; what stays cached is reclaimable, and counted free.
  EXPECT_EQ(on.pool->used_blocks(), 0);
  EXPECT_GT(on.pool->cached_blocks(), 0);
  EXPECT_EQ(on.pool->reclaimable_blocks(), on.pool->cached_blocks());
  EXPECT_EQ(off.service->stats().prefix_cache_queried_tokens, 0);
  EXPECT_FALSE(off.service->limits().prefix_caching);
  EXPECT_TRUE(on.service->limits().prefix_caching);
}

TEST_F(PrefixCacheTest, ABurstWithTheSameNewPrefixComputesItOnce) {
  Server on(model, *tokenizer, true, 64), off(model, *tokenizer, false, 64);
  const std::vector<int32_t> shared = ids(8, 50);  // 3 full blocks + 2 tokens
  std::vector<GenerationRequest> burst;
  for (int i = 0; i < 6; ++i) burst.push_back(request(cat(shared, ids(20 + i, 3)), 6));
  const auto got = on.run(burst);  // one submission: all six wait at once
  EXPECT_EQ(got, off.run(burst));
  const ServiceStats s = on.service->stats();
  EXPECT_EQ(s.prefix_cache_queried_tokens, 6 * 53);
  EXPECT_EQ(s.prefix_cache_hit_tokens, 5 * 3 * kBlock);  // the first computed them, five found them
  EXPECT_EQ(on.pool->used_blocks(), 0);
}

TEST_F(PrefixCacheTest, SharedBlocksAreChargedOnceAndNotReusedWhileHeld) {
  // 12 blocks. A: 48 + 100 tokens = 10 blocks. B: the same 48 + 8 = 4 blocks, 2 of them
  // shared with A (the third prompt block holds the last prompt token: computed): 2 new.
  // Both fit at once only if the shared blocks are charged once.
  Server on(model, *tokenizer, true, 12), off(model, *tokenizer, false, 64);
  const std::vector<int32_t> prompt = ids(9, 3 * kBlock);
  const std::vector<GenerationRequest> ab = {request(prompt, 100), request(prompt, 8)};
  Collector c;
  ASSERT_TRUE(on.service->submit(ab, c.sink()).accepted());
  ASSERT_TRUE(c.wait(1));
  {
    std::lock_guard<std::mutex> lock(c.mu);
    EXPECT_EQ(c.final_order[0], 1u) << "B ran beside A";
  }
  // B is done and A still holds the shared blocks: C takes B's two blocks, and must
  // not be given (and overwrite) A's.
  const GenerationRequest cr = request(ids(10, 20), 8);
  Collector cc;
  ASSERT_TRUE(on.service->submit({cr}, cc.sink()).accepted());
  ASSERT_TRUE(cc.wait(1));
  ASSERT_TRUE(c.wait(2));
  const auto want = off.run(ab);
  EXPECT_EQ(c.ids[0], want[0]);
  EXPECT_EQ(c.ids[1], want[1]);
  EXPECT_EQ(cc.ids[0], off.run(cr));
  EXPECT_EQ(on.service->stats().prefix_cache_hit_tokens, 2 * kBlock);
  EXPECT_EQ(on.pool->used_blocks(), 0);
}

TEST_F(PrefixCacheTest, EachTenantHasItsOwnCacheUnlessSharingIsAsked) {
  const std::vector<int32_t> prompt = ids(11, 3 * kBlock + 2);
  for (const bool across : {false, true}) {
    Server on(model, *tokenizer, true, 64, 32, TenantTable{{"default"}, {"a"}, {"b"}}, across);
    GenerationRequest a = request(prompt, 4), b = a;
    a.tenant = 1;
    b.tenant = 2;
    const auto first = on.run(a);
    EXPECT_EQ(on.run(a), first);  // a again: its own cache
    const int64_t own = on.service->stats().prefix_cache_hit_tokens;
    EXPECT_EQ(own, 3 * kBlock);
    EXPECT_EQ(on.run(b), first);
    EXPECT_EQ(on.service->stats().prefix_cache_hit_tokens - own, across ? 3 * kBlock : 0)
        << (across ? "shared: b finds a's blocks" : "isolated: b computes its own");
  }
}

TEST_F(PrefixCacheTest, CachedBlocksAreReclaimedNeverARefusal) {
  // 8 blocks = 128 tokens; each request needs all of them.
  Server on(model, *tokenizer, true, 8), off(model, *tokenizer, false, 8);
  const GenerationRequest a = request(ids(11, 100), 20), b = request(ids(12, 100), 20);
  EXPECT_EQ(on.run(a), off.run(a));
  EXPECT_EQ(on.pool->cached_blocks(), 7);  // 119 tokens written
  EXPECT_EQ(on.pool->free_blocks(), 8);
  EXPECT_EQ(on.run(b), off.run(b));  // admitted at once: the cached blocks are reclaimed
  const ServiceStats s = on.service->stats();
  EXPECT_EQ(s.prefix_cache_evictions, 7);
  EXPECT_EQ(s.prefix_cache_blocks, 7);  // b's blocks now
  EXPECT_EQ(s.prefix_cache_reclaimable_blocks, 7);
  EXPECT_EQ(on.pool->used_blocks(), 0);
}

TEST_F(PrefixCacheTest, APromptWantingItsLogprobsIsComputedWholeAndMatchesTheUncachedOne) {
  Server on(model, *tokenizer, true, 64), off(model, *tokenizer, false, 64);
  const GenerationRequest plain = request(ids(13, 3 * kBlock + 4), 4);
  on.run(plain);  // caches the prompt's three full blocks
  GenerationRequest detailed = plain;
  detailed.prompt_details = true;
  const auto prefill_of = [&](Server& server) {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<TokenInfo> prefill;
    bool done = false;
    EXPECT_TRUE(server.service
                    ->submit(std::vector{detailed},
                             [&](TokenEvent&& ev) {
                               std::lock_guard<std::mutex> lock(mu);
                               EXPECT_FALSE(ev.error.has_value());
                               if (!ev.prefill.empty()) prefill = ev.prefill;
                               done = done || ev.final;
                               cv.notify_all();
                             })
                    .accepted());
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; }));
    return prefill;
  };
  const ServiceStats before = on.service->stats();
  const std::vector<TokenInfo> cached = prefill_of(on), uncached = prefill_of(off);
  EXPECT_EQ(on.service->stats().prefix_cache_hit_tokens, before.prefix_cache_hit_tokens);  // nothing skipped
  ASSERT_EQ(cached.size(), plain.prompt_ids.size());
  ASSERT_EQ(uncached.size(), cached.size());
  for (size_t i = 1; i < cached.size(); ++i) {
    EXPECT_EQ(cached[i].id, plain.prompt_ids[i]);
    EXPECT_TRUE(std::isfinite(cached[i].logprob)) << i;
    EXPECT_NEAR(cached[i].logprob, uncached[i].logprob, 1e-4) << i;
  }
}

}  // namespace
}  // namespace plimsoll::sched
