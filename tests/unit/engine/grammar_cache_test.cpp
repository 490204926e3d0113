// GrammarCache: hits, pins, LRU eviction of unpinned entries, the private
// fallback when pinned entries fill the budget, bytes within the budget.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/grammar/grammar_cache.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll {
namespace {

// Small lazy budgets so a few entries make a budget of a few MiB.
GrammarLimits small_limits() {
  GrammarLimits l;
  l.max_lazy_bytes = int64_t{1} << 20;
  return l;
}

std::string key_of(const std::string& pattern) { return grammar_cache_key("regex", pattern, small_limits()); }

// A compile that counts its calls.
struct Compiler {
  std::string pattern;
  int* calls;
  Result<std::shared_ptr<const Grammar>> operator()() const {
    ++*calls;
    return grammar_from_regex(pattern, small_limits());
  }
};

// What one entry of `pattern` is charged.
int64_t entry_bytes(const std::string& pattern) {
  auto g = grammar_from_regex(pattern, small_limits());
  EXPECT_TRUE(g.ok());
  return GrammarCache::entry_bytes(**g, key_of(pattern));
}

Result<GrammarHandle> get(GrammarCache& cache, const std::string& pattern, int* calls) {
  return cache.get(key_of(pattern), Compiler{pattern, calls});
}

TEST(GrammarCache, KeyNamesKindSourceAndLimits) {
  GrammarLimits other = small_limits();
  other.max_stacks = 7;
  EXPECT_NE(grammar_cache_key("regex", "a", small_limits()), grammar_cache_key("regex", "a", other));
  EXPECT_NE(grammar_cache_key("regex", "a", small_limits()), grammar_cache_key("json_schema", "a", small_limits()));
  EXPECT_NE(grammar_cache_key("regex", "a", small_limits()), grammar_cache_key("regex", "b", small_limits()));
  EXPECT_EQ(grammar_cache_key("regex", "a", small_limits()), grammar_cache_key("regex", "a", small_limits()));
}

TEST(GrammarCache, SameSourceCompilesOnceAndSharesTheGrammar) {
  GrammarCache cache(int64_t{16} << 20);
  int calls = 0;
  auto a = get(cache, "[a-c]+", &calls);
  ASSERT_TRUE(a.ok()) << a.error().message;
  auto b = get(cache, "[a-c]+", &calls);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(a->cached);
  EXPECT_TRUE(b->cached);
  EXPECT_EQ(a->grammar.get(), b->grammar.get());
  EXPECT_TRUE(b->grammar->matches("abc"));
  const GrammarCacheStats st = cache.stats();
  EXPECT_EQ(st.hits, 1);
  EXPECT_EQ(st.misses, 1);
  EXPECT_EQ(st.entries, 1);
  EXPECT_EQ(st.pinned_entries, 1);
  EXPECT_EQ(st.bytes, entry_bytes("[a-c]+"));
  EXPECT_GE(st.bytes, a->grammar->bytes());  // the whole lazy budget is charged
}

TEST(GrammarCache, PinsAreDroppedWithTheLastCopyAndTheEntryStaysWarm) {
  GrammarCache cache(int64_t{16} << 20);
  int calls = 0;
  {
    auto a = get(cache, "x+", &calls);
    ASSERT_TRUE(a.ok());
    std::shared_ptr<const Grammar> copy = a->grammar;  // a request's items share one pin
    EXPECT_EQ(cache.stats().pinned_entries, 1);
  }
  EXPECT_EQ(cache.stats().pinned_entries, 0);
  EXPECT_EQ(cache.stats().entries, 1);
  auto again = get(cache, "x+", &calls);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(calls, 1);
}

TEST(GrammarCache, EvictsTheLeastRecentlyUsedUnpinnedEntry) {
  const int64_t one = std::max({entry_bytes("a+"), entry_bytes("b+"), entry_bytes("c+")});
  GrammarCache cache(2 * one + one / 2);  // room for two
  int calls = 0;
  ASSERT_TRUE(get(cache, "a+", &calls).ok());
  ASSERT_TRUE(get(cache, "b+", &calls).ok());
  ASSERT_TRUE(get(cache, "a+", &calls).ok());  // a is now more recent than b
  EXPECT_EQ(calls, 2);
  auto c = get(cache, "c+", &calls);  // evicts b
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->cached);
  EXPECT_EQ(cache.stats().evictions, 1);
  c = Result<GrammarHandle>(GrammarHandle{});
  calls = 0;
  ASSERT_TRUE(get(cache, "a+", &calls).ok());
  EXPECT_EQ(calls, 0) << "a was used more recently than b and stays";
  ASSERT_TRUE(get(cache, "b+", &calls).ok());
  EXPECT_EQ(calls, 1) << "b was evicted";
  EXPECT_LE(cache.stats().bytes, cache.budget_bytes());
}

TEST(GrammarCache, FullOfPinnedEntriesHandsBackAPrivateGrammar) {
  const int64_t one = std::max({entry_bytes("a+"), entry_bytes("b+"), entry_bytes("c+")});
  GrammarCache cache(2 * one + one / 2);
  int calls = 0;
  auto a = get(cache, "a+", &calls);
  auto b = get(cache, "b+", &calls);
  ASSERT_TRUE(a.ok() && b.ok());
  auto c = get(cache, "c+", &calls);  // both held by requests: no room
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->cached);
  EXPECT_TRUE(c->grammar->matches("ccc"));
  GrammarCacheStats st = cache.stats();
  EXPECT_EQ(st.uncached, 1);
  EXPECT_EQ(st.evictions, 0);
  EXPECT_EQ(st.entries, 2);
  // Once a request lets go, the next one finds room.
  a = Result<GrammarHandle>(GrammarHandle{});
  auto c2 = get(cache, "c+", &calls);
  ASSERT_TRUE(c2.ok());
  EXPECT_TRUE(c2->cached);
  EXPECT_EQ(cache.stats().evictions, 1);
}

TEST(GrammarCache, AGrammarLargerThanTheBudgetIsPrivate) {
  GrammarCache cache(entry_bytes("a+") / 2);
  int calls = 0;
  auto a = get(cache, "a+", &calls);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->cached);
  EXPECT_EQ(cache.stats().entries, 0);
  EXPECT_EQ(cache.stats().bytes, 0);
}

TEST(GrammarCache, ErrorsAreNotCached) {
  GrammarCache cache(int64_t{16} << 20);
  int calls = 0;
  EXPECT_FALSE(get(cache, "a**", &calls).ok());
  EXPECT_FALSE(get(cache, "a**", &calls).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.stats().entries, 0);
}

TEST(GrammarCache, WithoutACacheEveryGrammarIsPrivate) {
  int calls = 0;
  auto a = cached_grammar(nullptr, key_of("a+"), Compiler{"a+", &calls});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->cached);
  EXPECT_EQ(calls, 1);
}

TEST(GrammarCache, HandlesOutliveTheCache) {
  GrammarHandle kept;
  {
    GrammarCache cache(int64_t{16} << 20);
    int calls = 0;
    auto a = get(cache, "q+", &calls);
    ASSERT_TRUE(a.ok());
    kept = *a;
  }
  EXPECT_TRUE(kept.grammar->matches("qq"));
  kept = GrammarHandle{};  // unpins into a state the cache left behind (ASan checks)
}

TEST(GrammarCache, BytesNeverPassTheBudget) {
  const int64_t one = entry_bytes("a0+");
  GrammarCache cache(3 * one + one / 2);
  std::mt19937 rng(7);
  std::vector<GrammarHandle> held;
  int calls = 0;
  for (int i = 0; i < 400; ++i) {
    std::string pattern = "a";  // (appended: GCC 12's -Wrestrict misfires on "a" + to_string(...))
    pattern += std::to_string(rng() % 8);
    pattern += '+';
    auto h = get(cache, pattern, &calls);
    ASSERT_TRUE(h.ok());
    if (rng() % 2) held.push_back(*h);
    if (held.size() > 4 || rng() % 3 == 0) {
      if (!held.empty()) held.erase(held.begin() + static_cast<long>(rng() % held.size()));
    }
    const GrammarCacheStats st = cache.stats();
    ASSERT_LE(st.bytes, cache.budget_bytes());
    ASSERT_LE(st.pinned_entries, st.entries);
  }
  const GrammarCacheStats st = cache.stats();
  EXPECT_GT(st.hits, 0);
  EXPECT_GT(st.evictions, 0);
  EXPECT_EQ(st.hits + st.misses, 400);
}

TEST(GrammarCache, ConcurrentRequestsForANewSourceCompileItOnce) {
  GrammarCache cache(int64_t{16} << 20);
  std::atomic<bool> started{false}, release{false};
  std::atomic<int> calls{0};
  auto slow = [&]() -> Result<std::shared_ptr<const Grammar>> {
    ++calls;
    started = true;
    while (!release) std::this_thread::yield();
    return grammar_from_regex("z+", small_limits());
  };
  Result<GrammarHandle> first = make_error(ErrorCode::kInternal, "not run");
  Result<GrammarHandle> second = make_error(ErrorCode::kInternal, "not run");
  std::thread t1([&] { first = cache.get(key_of("z+"), slow); });
  while (!started) std::this_thread::yield();
  std::thread t2([&] { second = cache.get(key_of("z+"), slow); });  // finds the compile under way, waits
  release = true;
  t1.join();
  t2.join();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(first->grammar.get(), second->grammar.get());
}

TEST(GrammarCache, ManyThreadsAskingForOneKeyCompileItOnce) {
  // A waiter woken between the compile's end and its entry must find the entry,
  // not start a second compile.
  GrammarCache cache(int64_t{16} << 20);
  for (int round = 0; round < 50; ++round) {
    std::string pattern = "k";  // (appended: GCC 12's -Wrestrict misfires on "k" + to_string(...))
    pattern += std::to_string(round);
    pattern += '+';
    std::atomic<int> calls{0};
    auto compile = [&]() -> Result<std::shared_ptr<const Grammar>> {
      ++calls;
      std::this_thread::yield();
      return grammar_from_regex(pattern, small_limits());
    };
    std::vector<std::thread> threads;
    std::vector<const Grammar*> seen(4, nullptr);
    for (size_t t = 0; t < seen.size(); ++t) {
      threads.emplace_back([&, t] {
        Result<GrammarHandle> h = cache.get(key_of(pattern), compile);
        if (h.ok()) seen[t] = h->grammar.get();
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_EQ(calls.load(), 1) << pattern;
    for (const Grammar* g : seen) ASSERT_EQ(g, seen[0]) << pattern;
  }
}

}  // namespace
}  // namespace plimsoll
