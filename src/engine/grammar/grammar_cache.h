// GrammarCache: the server's compiled grammars, shared by every request that
// sends the same grammar source, within a fixed byte budget that is a line of
// the memory plan (--grammar-cache-memory). An entry is charged its whole
// Grammar::bytes() (rules + NFA + the full lazy budget it may grow to) plus its
// key, so the cache never holds more than its budget however its grammars'
// lazy parts grow. A request's handle pins its entry; unpinned entries stay
// (warm: their DFA states and masks are kept for the next request) until room
// is needed, then the least recently used goes first. A grammar that finds no
// room (the budget full of pinned entries, or larger than the budget) is
// handed back private: admission charges it to the request as before.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "engine/grammar/grammar.h"

namespace plimsoll {

// A request's grammar and who pays for it.
struct GrammarHandle {
  std::shared_ptr<const Grammar> grammar;  // null: no grammar
  // Pinned in a GrammarCache while any copy of `grammar` lives: the cache's
  // plan line pays for it, admission charges the request nothing for it.
  bool cached = false;
};

// What the cache did so far (counters) and holds now (gauges).
struct GrammarCacheStats {
  int64_t hits = 0;       // lookups that found their grammar (no compile)
  int64_t misses = 0;     // lookups that compiled
  int64_t evictions = 0;  // unpinned entries dropped to make room
  int64_t uncached = 0;   // compiled grammars handed back private (no room)
  int64_t entries = 0;
  int64_t pinned_entries = 0;
  int64_t bytes = 0;      // charged by the entries held, <= budget_bytes
  int64_t budget_bytes = 0;
};

// The canonical source of a grammar: its kind ("json_schema", "regex",
// "tools", ...), its source text exactly as compiled (a schema's JSON text in
// the client's key order, a pattern) and every GrammarLimits field (a grammar
// compiled under other limits is another grammar).
std::string grammar_cache_key(std::string_view kind, std::string_view source, const GrammarLimits& limits);

class GrammarCache {
 public:
  using Compile = std::function<Result<std::shared_ptr<const Grammar>>()>;
  // Bookkeeping charged per entry besides its key and grammar (map node, entry).
  static constexpr int64_t kEntryOverheadBytes = 256;

  explicit GrammarCache(int64_t budget_bytes);
  ~GrammarCache();
  GrammarCache(const GrammarCache&) = delete;
  GrammarCache& operator=(const GrammarCache&) = delete;

  // The grammar for `key`: the cached one (a hit), else compile()'s (a miss),
  // entered when it fits the budget after evicting unpinned entries, least
  // recently used first, else handed back private (cached = false). While
  // another thread compiles the same key this one waits for it, polling the
  // current WorkControl (cancel, deadline). compile()'s errors come back as
  // they are (nothing is entered).
  Result<GrammarHandle> get(const std::string& key, const Compile& compile);

  GrammarCacheStats stats() const;
  int64_t budget_bytes() const { return budget_bytes_; }
  // What an entry of `grammar` under `key` is charged.
  static int64_t entry_bytes(const Grammar& grammar, const std::string& key);

 private:
  struct Entry;
  struct State;
  // Under state's mutex: makes room for `bytes` by evicting unpinned entries
  // (LRU first) into `evicted` (destroyed by the caller outside the lock);
  // false, evicting nothing, when the pinned entries leave too little room.
  bool make_room(int64_t bytes, std::vector<std::shared_ptr<const Grammar>>& evicted);
  // Under state's mutex: a pinned handle of `e`.
  GrammarHandle pin(Entry& e);

  int64_t budget_bytes_;
  std::shared_ptr<State> state_;  // shared with the pins, which may outlive the cache
};

// cache->get(key, compile), or compile() handed back private without a cache.
Result<GrammarHandle> cached_grammar(GrammarCache* cache, const std::string& key,
                                     const GrammarCache::Compile& compile);

}  // namespace plimsoll
