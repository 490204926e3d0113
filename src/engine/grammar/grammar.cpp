// Thompson NFA construction and subset construction over byte classes.
#include "engine/grammar/grammar.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>

#include "core/bytes.h"
#include "core/work_control.h"

namespace plimsoll {
namespace {

// A std::map node holding a subset (key vector) and its id: the tree node's
// header, the vector object, the id, malloc's header and rounding.
constexpr int64_t kSubsetNodeBytes = 96;
// Steps between polls of the thread's WorkControl.
constexpr int64_t kPollSteps = 1 << 16;

Error limit_error(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, what + "; simplify the schema or pattern");
}

class Closure {
 public:
  // Charges its marks and stack (one int32 each per NFA state) to `meter` first.
  Closure(const Nfa& nfa, CompileMeter& meter) : nfa_(nfa), meter_(meter) {
    const int64_t n = static_cast<int64_t>(nfa.states().size());
    charged_ = 2 * (n * 4 + 32);
    if (!meter_.charge(charged_)) {
      charged_ = 0;
      return;
    }
    mark_.assign(static_cast<size_t>(n), 0);
    stack_.reserve(static_cast<size_t>(n));
  }
  ~Closure() { meter_.release(charged_); }
  Closure(const Closure&) = delete;
  Closure& operator=(const Closure&) = delete;

  // The epsilon closure of `seeds`, sorted, into `out`; false when the meter
  // stopped it (its bytes are charged by the caller before it keeps them).
  bool of(const std::vector<int32_t>& seeds, std::vector<int32_t>& out) {
    ++generation_;
    out.clear();
    stack_.clear();
    for (int32_t s : seeds) push(s);
    while (!stack_.empty()) {
      const int32_t s = stack_.back();
      stack_.pop_back();
      out.push_back(s);
      const auto& eps = nfa_.states()[static_cast<size_t>(s)].eps;
      if (!meter_.step(1 + static_cast<int64_t>(eps.size()))) return false;
      for (int32_t t : eps) push(t);
    }
    std::sort(out.begin(), out.end());
    return true;
  }

 private:
  void push(int32_t s) {
    if (mark_[static_cast<size_t>(s)] == generation_) return;
    mark_[static_cast<size_t>(s)] = generation_;
    stack_.push_back(s);
  }
  const Nfa& nfa_;
  CompileMeter& meter_;
  int64_t charged_ = 0;
  std::vector<uint32_t> mark_;
  uint32_t generation_ = 0;
  std::vector<int32_t> stack_;
};

}  // namespace

bool CompileMeter::charge(int64_t bytes) {
  if (failed_) return false;
  if (held_bytes_ + bytes > limits_.max_compile_bytes) {
    fail(limit_error("the grammar needs more than " + format_bytes(limits_.max_compile_bytes) +
                     " to compile (the limit)"));
    return false;
  }
  held_bytes_ += bytes;
  peak_bytes_ = std::max(peak_bytes_, held_bytes_);
  return true;
}

bool CompileMeter::step(int64_t n) {
  if (failed_) return false;
  steps_ += n;
  if (steps_ > limits_.max_compile_steps) {
    fail(limit_error("the grammar needs more than " + std::to_string(limits_.max_compile_steps) +
                     " steps to compile (the limit)"));
    return false;
  }
  if (steps_ >= next_poll_) {
    next_poll_ = steps_ + kPollSteps;
    if (const WorkControl* c = current_work_control()) {
      Status s = c->check();
      if (!s.ok()) {
        fail(s.error());
        return false;
      }
    }
  }
  return true;
}

void CompileMeter::fail(Error error) {
  if (failed_) return;
  failed_ = true;
  failure_ = std::move(error);
}

Nfa::~Nfa() { meter_.release(charged_bytes_); }

// The vector's buffer at its next capacity, charged while the old one is
// still held (both exist while it moves). The old buffer's bytes stay counted
// until the NFA dies: an upper bound, never less than what is held.
template <typename V>
bool Nfa::grow(V& v) {
  if (v.size() < v.capacity()) return true;
  const size_t next = std::max<size_t>(4, 2 * v.capacity());
  const int64_t bytes = static_cast<int64_t>(next * sizeof(typename V::value_type)) + 32;
  if (!meter_.charge(bytes)) return false;
  charged_bytes_ += bytes;
  v.reserve(next);
  return true;
}

int32_t Nfa::add_state() {
  if (failed() || !meter_.step()) return 0;
  if (static_cast<int64_t>(states_.size()) >= max_states_) {
    meter_.fail(limit_error("the grammar needs more than " + std::to_string(max_states_) +
                            " automaton states while building (the limit)"));
    return 0;
  }
  if (!grow(states_)) return 0;
  states_.emplace_back();
  return static_cast<int32_t>(states_.size() - 1);
}

void Nfa::add_epsilon(int32_t from, int32_t to) {
  if (failed() || !meter_.step()) return;
  auto& eps = states_[static_cast<size_t>(from)].eps;
  if (!grow(eps)) return;
  eps.push_back(to);
}

void Nfa::add_range(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
  if (failed() || !meter_.step()) return;
  auto& edges = states_[static_cast<size_t>(from)].edges;
  if (!grow(edges)) return;
  edges.push_back({lo, hi, to});
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
  CompileMeter& meter = nfa.meter();
  if (meter.failed()) return meter.failure();
  // What this compile charges beyond the NFA; given back when it returns (the
  // automaton it keeps is charged again, at admission, by Grammar::bytes()).
  struct Charges {
    CompileMeter& meter;
    int64_t bytes = 0;
    bool take(int64_t b) {
      if (!meter.charge(b)) return false;
      bytes += b;
      return true;
    }
    ~Charges() { meter.release(bytes); }
  } held{meter};
  auto failed = [&]() -> Error { return meter.failure(); };
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

  Closure closure(nfa, meter);
  if (meter.failed()) return failed();
  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<const std::vector<int32_t>*> sets;
  std::vector<uint8_t> accepts;
  std::vector<int32_t> seeds = {root.start};
  std::vector<int32_t> set;
  // Per DFA state: its subset (node + ids), its pointer and flag, its row of
  // transitions (x 3: a buffer that doubles is held beside the old one), and
  // later its distance and successor flag.
  const int64_t per_state_bytes = kSubsetNodeBytes + 8 + 1 + static_cast<int64_t>(classes) * 4 * 3 + 4 + 1;
  auto intern = [&]() -> Result<int32_t> {
    if (set.empty()) return Grammar::kDead;
    auto it = ids.find(set);
    if (it != ids.end()) return it->second;
    if (static_cast<int64_t>(sets.size()) >= limits.max_dfa_states) {
      return limit_error("the grammar compiles to more than " + std::to_string(limits.max_dfa_states) +
                         " states (the limit)");
    }
    if (!held.take(per_state_bytes + static_cast<int64_t>(set.size()) * 4 + 32)) return failed();
    const bool acc = std::binary_search(set.begin(), set.end(), root.end);
    const auto id = static_cast<int32_t>(sets.size());
    auto inserted = ids.emplace(set, id).first;
    sets.push_back(&inserted->first);
    accepts.push_back(acc ? 1 : 0);
    return id;
  };
  // The closure's output and the seeds: at most one entry per NFA state each.
  if (!held.take(2 * (static_cast<int64_t>(nfa.states().size()) * 4 + 32))) return failed();
  set.reserve(nfa.states().size());
  seeds.reserve(nfa.states().size());
  if (!closure.of(seeds, set)) return failed();
  PLIMSOLL_TRY(intern());
  for (size_t d = 0; d < sets.size(); ++d) {
    g->next_.resize((d + 1) * classes, Grammar::kDead);
    for (size_t c = 0; c < classes; ++c) {
      const uint8_t r = representative[c];
      seeds.clear();
      for (int32_t s : *sets[d]) {
        const auto& edges = nfa.states()[static_cast<size_t>(s)].edges;
        if (!meter.step(1 + static_cast<int64_t>(edges.size()))) return failed();
        for (const Nfa::Edge& e : edges) {
          if (e.lo <= r && r <= e.hi) seeds.push_back(e.to);
        }
      }
      if (seeds.empty()) continue;
      if (!closure.of(seeds, set)) return failed();
      PLIMSOLL_ASSIGN(const int32_t to, intern());
      g->next_[d * classes + c] = to;
    }
  }
  // Distances to acceptance: reverse breadth-first search.
  const size_t n = sets.size();
  // Reverse edges: at most one per transition, in a vector per state that doubles.
  if (!held.take(static_cast<int64_t>(n) * 56 + 2 * static_cast<int64_t>(n * classes) * 4)) return failed();
  std::vector<std::vector<int32_t>> rev(n);
  for (size_t d = 0; d < n; ++d) {
    if (!meter.step(static_cast<int64_t>(classes))) return failed();
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
