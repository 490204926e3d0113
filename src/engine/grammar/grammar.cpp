// Thompson NFA construction and subset construction over byte classes.
#include "engine/grammar/grammar.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>

namespace plimsoll {
namespace {

// Sets held while determinizing: at most this many NFA state ids in all
// (x 4 B: 8 MiB), so a compile's transient memory is bounded too.
constexpr int64_t kMaxSubsetEntries = int64_t{2} << 20;

class Closure {
 public:
  explicit Closure(const Nfa& nfa) : nfa_(nfa), mark_(nfa.states().size(), 0) {}

  // The epsilon closure of `seeds`, sorted.
  std::vector<int32_t> of(std::vector<int32_t>& seeds) {
    ++generation_;
    std::vector<int32_t> out;
    stack_.clear();
    for (int32_t s : seeds) push(s);
    while (!stack_.empty()) {
      const int32_t s = stack_.back();
      stack_.pop_back();
      out.push_back(s);
      for (int32_t t : nfa_.states()[static_cast<size_t>(s)].eps) push(t);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  void push(int32_t s) {
    if (mark_[static_cast<size_t>(s)] == generation_) return;
    mark_[static_cast<size_t>(s)] = generation_;
    stack_.push_back(s);
  }
  const Nfa& nfa_;
  std::vector<uint32_t> mark_;
  uint32_t generation_ = 0;
  std::vector<int32_t> stack_;
};

}  // namespace

int32_t Nfa::add_state() {
  if (static_cast<int64_t>(states_.size()) >= max_states_) {
    exceeded_ = true;
    return 0;
  }
  states_.emplace_back();
  return static_cast<int32_t>(states_.size() - 1);
}

void Nfa::add_epsilon(int32_t from, int32_t to) {
  if (exceeded_) return;
  states_[static_cast<size_t>(from)].eps.push_back(to);
}

void Nfa::add_range(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
  if (exceeded_) return;
  states_[static_cast<size_t>(from)].edges.push_back({lo, hi, to});
}

Nfa::Frag Nfa::empty() {
  const int32_t s = add_state();
  return {s, s};
}

Nfa::Frag Nfa::byte_range(uint8_t lo, uint8_t hi) {
  const int32_t a = add_state();
  const int32_t b = add_state();
  add_range(a, lo, hi, b);
  return {a, b};
}

Nfa::Frag Nfa::literal(const std::string& bytes) {
  const int32_t first = add_state();
  int32_t cur = first;
  for (char c : bytes) {
    const int32_t next = add_state();
    const auto b = static_cast<uint8_t>(c);
    add_range(cur, b, b, next);
    cur = next;
  }
  return {first, cur};
}

Nfa::Frag Nfa::seq(Frag a, Frag b) {
  add_epsilon(a.end, b.start);
  return {a.start, b.end};
}

Nfa::Frag Nfa::alt(const std::vector<Frag>& options) {
  const int32_t s = add_state();
  const int32_t e = add_state();
  for (const Frag& f : options) {
    add_epsilon(s, f.start);
    add_epsilon(f.end, e);
  }
  return {s, e};
}

Nfa::Frag Nfa::optional(Frag f) {
  const int32_t s = add_state();
  const int32_t e = add_state();
  add_epsilon(s, f.start);
  add_epsilon(s, e);
  add_epsilon(f.end, e);
  return {s, e};
}

Nfa::Frag Nfa::star(Frag f) {
  const int32_t s = add_state();
  const int32_t e = add_state();
  add_epsilon(s, f.start);
  add_epsilon(s, e);
  add_epsilon(f.end, f.start);
  add_epsilon(f.end, e);
  return {s, e};
}

Nfa::Frag Nfa::plus(Frag f) {
  const int32_t e = add_state();
  add_epsilon(f.end, f.start);
  add_epsilon(f.end, e);
  return {f.start, e};
}

int32_t Grammar::walk(int32_t state, const std::string& bytes) const {
  for (char c : bytes) {
    if (state < 0) return kDead;
    state = step(state, static_cast<uint8_t>(c));
  }
  return state;
}

int64_t Grammar::bytes() const {
  return static_cast<int64_t>(sizeof(Grammar) + next_.capacity() * sizeof(int32_t) +
                              dist_.capacity() * sizeof(int32_t) + has_successor_.capacity()) +
         64;
}

Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, Nfa::Frag root, const GrammarLimits& limits) {
  if (nfa.exceeded()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "the grammar needs more than " + std::to_string(limits.max_nfa_states) +
                          " automaton states while building (the limit); simplify the schema or pattern");
  }
  auto g = std::make_shared<Grammar>();
  // Byte classes: boundaries where some edge starts or ends.
  std::array<bool, 257> boundary{};
  boundary[0] = true;
  for (const Nfa::State& s : nfa.states()) {
    for (const Nfa::Edge& e : s.edges) {
      boundary[e.lo] = true;
      boundary[static_cast<size_t>(e.hi) + 1] = true;
    }
  }
  std::vector<uint8_t> representative;
  int64_t cls = -1;
  for (int b = 0; b < 256; ++b) {
    if (boundary[static_cast<size_t>(b)]) {
      ++cls;
      representative.push_back(static_cast<uint8_t>(b));
    }
    g->class_of_[static_cast<size_t>(b)] = static_cast<uint8_t>(cls);
  }
  g->num_classes_ = cls + 1;
  const auto classes = static_cast<size_t>(g->num_classes_);

  Closure closure(nfa);
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<const std::vector<int32_t>*> sets;
  std::vector<uint8_t> accepts;
  int64_t entries = 0;
  std::vector<int32_t> seeds = {root.start};
  auto intern = [&](std::vector<int32_t> set) -> Result<int32_t> {
    if (set.empty()) return Grammar::kDead;
    auto it = ids.find(set);
    if (it != ids.end()) return it->second;
    if (static_cast<int64_t>(sets.size()) >= limits.max_dfa_states) {
      return make_error(ErrorCode::kInvalidArgument,
                        "the grammar compiles to more than " + std::to_string(limits.max_dfa_states) +
                            " states (the limit); simplify the schema or pattern");
    }
    entries += static_cast<int64_t>(set.size());
    if (entries > kMaxSubsetEntries) {
      return make_error(ErrorCode::kInvalidArgument, "the grammar is too large to compile (more than " +
                                                         std::to_string(kMaxSubsetEntries) +
                                                         " automaton state entries); simplify the schema or pattern");
    }
    const bool acc = std::binary_search(set.begin(), set.end(), root.end);
    const auto id = static_cast<int32_t>(sets.size());
    auto inserted = ids.emplace(std::move(set), id).first;
    sets.push_back(&inserted->first);
    accepts.push_back(acc ? 1 : 0);
    return id;
  };
  PLIMSOLL_TRY(intern(closure.of(seeds)));
  for (size_t d = 0; d < sets.size(); ++d) {
    g->next_.resize((d + 1) * classes, Grammar::kDead);
    for (size_t c = 0; c < classes; ++c) {
      const uint8_t r = representative[c];
      seeds.clear();
      for (int32_t s : *sets[d]) {
        for (const Nfa::Edge& e : nfa.states()[static_cast<size_t>(s)].edges) {
          if (e.lo <= r && r <= e.hi) seeds.push_back(e.to);
        }
      }
      if (seeds.empty()) continue;
      PLIMSOLL_ASSIGN(const int32_t to, intern(closure.of(seeds)));
      g->next_[d * classes + c] = to;
    }
  }
  // Distances to acceptance: reverse breadth-first search.
  const size_t n = sets.size();
  std::vector<std::vector<int32_t>> rev(n);
  for (size_t d = 0; d < n; ++d) {
    for (size_t c = 0; c < classes; ++c) {
      const int32_t to = g->next_[d * classes + c];
      if (to >= 0) rev[static_cast<size_t>(to)].push_back(static_cast<int32_t>(d));
    }
  }
  g->dist_.assign(n, Grammar::kUnreachable);
  std::deque<int32_t> queue;
  for (size_t d = 0; d < n; ++d) {
    if (accepts[d]) {
      g->dist_[d] = 0;
      queue.push_back(static_cast<int32_t>(d));
    }
  }
  while (!queue.empty()) {
    const int32_t s = queue.front();
    queue.pop_front();
    for (int32_t p : rev[static_cast<size_t>(s)]) {
      if (g->dist_[static_cast<size_t>(p)] != Grammar::kUnreachable) continue;
      g->dist_[static_cast<size_t>(p)] = g->dist_[static_cast<size_t>(s)] + 1;
      queue.push_back(p);
    }
  }
  if (g->dist_[0] == Grammar::kUnreachable) {
    return make_error(ErrorCode::kInvalidArgument, "the grammar accepts no output at all");
  }
  // Doomed states become dead, so the mask never enters one.
  g->has_successor_.assign(n, 0);
  for (size_t d = 0; d < n; ++d) {
    for (size_t c = 0; c < classes; ++c) {
      int32_t& to = g->next_[d * classes + c];
      if (to >= 0 && g->dist_[static_cast<size_t>(to)] == Grammar::kUnreachable) to = Grammar::kDead;
      if (to >= 0) g->has_successor_[d] = 1;
    }
    if (g->dist_[d] != Grammar::kUnreachable) g->max_dist_ = std::max(g->max_dist_, g->dist_[d]);
  }
  g->next_.shrink_to_fit();
  static std::atomic<uint64_t> next_id{1};
  g->id_ = next_id.fetch_add(1);
  return std::shared_ptr<const Grammar>(std::move(g));
}

Nfa::Frag utf8_char(Nfa& nfa, const std::array<bool, 128>& ascii_allowed) {
  std::vector<Nfa::Frag> options;
  for (int b = 0; b < 128;) {
    if (!ascii_allowed[static_cast<size_t>(b)]) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 128 && ascii_allowed[static_cast<size_t>(e + 1)]) ++e;
    options.push_back(nfa.byte_range(static_cast<uint8_t>(b), static_cast<uint8_t>(e)));
    b = e + 1;
  }
  auto cont = [&] { return nfa.byte_range(0x80, 0xBF); };
  options.push_back(nfa.seq(nfa.byte_range(0xC2, 0xDF), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.byte_range(0xE0, 0xE0), nfa.byte_range(0xA0, 0xBF)), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.byte_range(0xE1, 0xEC), cont()), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.byte_range(0xED, 0xED), nfa.byte_range(0x80, 0x9F)), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.byte_range(0xEE, 0xEF), cont()), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.seq(nfa.byte_range(0xF0, 0xF0), nfa.byte_range(0x90, 0xBF)), cont()), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.seq(nfa.byte_range(0xF1, 0xF3), cont()), cont()), cont()));
  options.push_back(nfa.seq(nfa.seq(nfa.seq(nfa.byte_range(0xF4, 0xF4), nfa.byte_range(0x80, 0x8F)), cont()), cont()));
  return nfa.alt(options);
}

}  // namespace plimsoll
