// The server's grammar cache (grammar_cache.h): entries by canonical source,
// pins as the handles' shared owner, LRU eviction of unpinned entries.
#include "engine/grammar/grammar_cache.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "core/work_control.h"

namespace plimsoll {
namespace {

// How often a thread waiting for another's compile of its key polls its control.
constexpr std::chrono::milliseconds kWaitPoll{20};

}  // namespace

std::string grammar_cache_key(std::string_view kind, std::string_view source, const GrammarLimits& l) {
  std::string key = fmt::format("{}|{},{},{},{},{},{},{},{},{},{}|", kind, l.max_source_bytes, l.max_nfa_states,
                                l.max_rule_states, l.max_rules, l.max_repeat, l.max_stack_depth, l.max_stacks,
                                l.max_lazy_bytes, l.max_compile_bytes, l.max_compile_steps);
  key.append(source);
  return key;
}

struct GrammarCache::Entry {
  std::shared_ptr<const Grammar> grammar;
  int64_t bytes = 0;
  int64_t pins = 0;
  uint64_t last_used = 0;  // the state's tick when it was last unpinned or entered
};

struct GrammarCache::State {
  std::mutex mu;
  std::condition_variable compiled;            // a compile of some key ended
  std::unordered_map<std::string, Entry> entries;  // node-based: an Entry's address is stable while it is held
  std::unordered_set<std::string> compiling;   // keys being compiled now (by one thread each)
  int64_t bytes = 0;
  uint64_t tick = 0;
  GrammarCacheStats stats;
};

namespace {

// The owner of a handle's copies: one pin of its entry, dropped with the last copy.
// (Built in place only: a moved-from copy would unpin too.)
struct Pin {
  Pin(std::shared_ptr<void> keepalive, std::mutex& m, int64_t& entry_pins, int64_t& pinned, uint64_t& used,
      uint64_t& clock)
      : state_keepalive(std::move(keepalive)), mu(&m), pins(&entry_pins), pinned_entries(&pinned),
        last_used(&used), tick(&clock) {}
  Pin(const Pin&) = delete;
  Pin& operator=(const Pin&) = delete;
  std::shared_ptr<void> state_keepalive;
  std::mutex* mu;
  int64_t* pins;
  int64_t* pinned_entries;
  uint64_t* last_used;
  uint64_t* tick;
  ~Pin() {
    std::lock_guard<std::mutex> lock(*mu);
    if (--*pins == 0) {
      --*pinned_entries;
      *last_used = ++*tick;
    }
  }
};

// Ends a key's compile (whatever way the compile leaves) and wakes its waiters. On
// success the key leaves `compiling` under the same lock that enters its entry, so a
// waiter never sees neither and compiles the key a second time.
class CompilingMark {
 public:
  CompilingMark(std::mutex& mu, std::condition_variable& cv, std::unordered_set<std::string>& keys,
                const std::string& key)
      : mu_(mu), cv_(cv), keys_(keys), key_(key) {}
  void end_locked() {  // (caller holds mu_)
    keys_.erase(key_);
    ended_ = true;
  }
  ~CompilingMark() {
    if (!ended_) {
      std::lock_guard<std::mutex> lock(mu_);
      keys_.erase(key_);
    }
    cv_.notify_all();
  }
  CompilingMark(const CompilingMark&) = delete;
  CompilingMark& operator=(const CompilingMark&) = delete;

 private:
  std::mutex& mu_;
  std::condition_variable& cv_;
  std::unordered_set<std::string>& keys_;
  const std::string& key_;
  bool ended_ = false;
};

}  // namespace

GrammarCache::GrammarCache(int64_t budget_bytes)
    : budget_bytes_(std::max<int64_t>(0, budget_bytes)), state_(std::make_shared<State>()) {
  state_->stats.budget_bytes = budget_bytes_;
}

GrammarCache::~GrammarCache() = default;

int64_t GrammarCache::entry_bytes(const Grammar& grammar, const std::string& key) {
  return grammar.bytes() + static_cast<int64_t>(key.capacity()) + kEntryOverheadBytes;
}

GrammarHandle GrammarCache::pin(Entry& e) {
  State& s = *state_;
  if (e.pins++ == 0) ++s.stats.pinned_entries;
  auto owner = std::make_shared<Pin>(state_, s.mu, e.pins, s.stats.pinned_entries, e.last_used, s.tick);
  return GrammarHandle{std::shared_ptr<const Grammar>(owner, e.grammar.get()), true};
}

bool GrammarCache::make_room(int64_t bytes, std::vector<std::shared_ptr<const Grammar>>& evicted) {
  State& s = *state_;
  if (bytes > budget_bytes_) return false;
  int64_t pinned_bytes = 0;
  for (const auto& [key, e] : s.entries) pinned_bytes += e.pins > 0 ? e.bytes : 0;
  if (pinned_bytes + bytes > budget_bytes_) return false;
  while (s.bytes + bytes > budget_bytes_) {
    auto oldest = s.entries.end();
    for (auto it = s.entries.begin(); it != s.entries.end(); ++it) {
      if (it->second.pins == 0 && (oldest == s.entries.end() || it->second.last_used < oldest->second.last_used)) {
        oldest = it;
      }
    }
    s.bytes -= oldest->second.bytes;  // (found: the unpinned entries cover what is missing)
    evicted.push_back(std::move(oldest->second.grammar));
    s.entries.erase(oldest);
    ++s.stats.evictions;
  }
  return true;
}

Result<GrammarHandle> GrammarCache::get(const std::string& key, const Compile& compile) {
  State& s = *state_;
  std::vector<std::shared_ptr<const Grammar>> evicted;  // destroyed after the lock is released
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (auto it = s.entries.find(key); it != s.entries.end()) {
      ++s.stats.hits;
      it->second.last_used = ++s.tick;
      return pin(it->second);
    }
    if (s.compiling.count(key) == 0) break;
    s.compiled.wait_for(lock, kWaitPoll);  // another request compiles this key: its result is ours
    if (const WorkControl* control = current_work_control()) PLIMSOLL_TRY(control->check());
  }
  s.compiling.insert(key);
  ++s.stats.misses;
  lock.unlock();
  CompilingMark mark(s.mu, s.compiled, s.compiling, key);  // (ends before `lock` unlocks: declared after it)
  Result<std::shared_ptr<const Grammar>> compiled = compile();
  if (!compiled.ok()) return compiled.error();
  if (!*compiled) return GrammarHandle{};
  const int64_t bytes = entry_bytes(**compiled, key);
  lock.lock();
  mark.end_locked();
  if (!make_room(bytes, evicted)) {
    ++s.stats.uncached;
    return GrammarHandle{std::move(*compiled), false};
  }
  auto [it, inserted] = s.entries.try_emplace(key);
  (void)inserted;  // (the compiling mark kept others from entering this key)
  it->second.grammar = std::move(*compiled);
  it->second.bytes = bytes;
  it->second.last_used = ++s.tick;
  s.bytes += bytes;
  return pin(it->second);
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  GrammarCacheStats st = state_->stats;
  st.entries = static_cast<int64_t>(state_->entries.size());
  st.bytes = state_->bytes;
  return st;
}

Result<GrammarHandle> cached_grammar(GrammarCache* cache, const std::string& key,
                                     const GrammarCache::Compile& compile) {
  if (cache) return cache->get(key, compile);
  PLIMSOLL_ASSIGN(std::shared_ptr<const Grammar> g, compile());
  return GrammarHandle{std::move(g), false};
}

}  // namespace plimsoll
