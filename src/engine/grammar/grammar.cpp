// Thompson NFA construction and the compile of rules (owners, fewest bytes).
#include "engine/grammar/grammar.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>

#include "core/bytes.h"
#include "engine/grammar/grammar_lazy.h"
#include "core/work_control.h"

namespace plimsoll {
namespace {

// Steps between polls of the thread's WorkControl.
constexpr int64_t kPollSteps = 1 << 16;

Error limit_error(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, what + "; simplify the schema or pattern");
}

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

void Nfa::add_call(int32_t from, int32_t rule, int32_t to) {
  if (failed() || !meter_.step()) return;
  auto& calls = states_[static_cast<size_t>(from)].calls;
  if (!grow(calls)) return;
  calls.push_back({rule, to});
}

Nfa::Frag Nfa::call(int32_t rule) {
  const int32_t a = add_state();
  const int32_t b = add_state();
  add_call(a, rule, b);
  return {a, b};
}

namespace {

int32_t sat_add(int64_t a, int64_t b) { return static_cast<int32_t>(std::min<int64_t>(a + b, Grammar::kUnreachable)); }

// Which rule each state belongs to (reached from its first or next entry
// without a call); -1: unused. False when a state is shared by two rules or a
// rule passes max_rule_states.
bool assign_owners(const Nfa& nfa, const std::vector<GrammarRule>& rules, std::vector<int32_t>& owner,
                   std::vector<uint8_t>& tail, CompileMeter& meter) {
  const auto& states = nfa.states();
  std::vector<int32_t> todo;
  for (size_t r = 0; r < rules.size(); ++r) {
    const auto rule = static_cast<int32_t>(r);
    int64_t count = 0;
    for (const uint8_t part : {uint8_t{1}, uint8_t{0}}) {  // the tail (if any), then the items
      if (part == 1 && rules[r].tail < 0) continue;
      todo = part == 1 ? std::vector<int32_t>{rules[r].tail, rules[r].tail_end}
                       : std::vector<int32_t>{rules[r].first, rules[r].next, rules[r].end};
      while (!todo.empty()) {
        const int32_t s = todo.back();
        todo.pop_back();
        int32_t& o = owner[static_cast<size_t>(s)];
        if (o == rule && tail[static_cast<size_t>(s)] == part) continue;
        if (o >= 0) {
          meter.fail(make_error(ErrorCode::kInternal, "grammar: a state is shared by two rules or parts"));
          return false;
        }
        o = rule;
        tail[static_cast<size_t>(s)] = part;
        if (++count > meter.limits().max_rule_states) {
          meter.fail(limit_error("a rule of the grammar needs more than " + std::to_string(meter.limits().max_rule_states) +
                                 " automaton states (the limit)"));
          return false;
        }
        const Nfa::State& st = states[static_cast<size_t>(s)];
        if (!meter.step(1 + static_cast<int64_t>(st.eps.size() + st.edges.size() + st.calls.size()))) return false;
        for (int32_t t : st.eps) todo.push_back(t);
        for (const Nfa::Edge& e : st.edges) todo.push_back(e.to);
        for (const Nfa::Call& c : st.calls) todo.push_back(c.to);
      }
    }
  }
  return true;
}

}  // namespace

Grammar::~Grammar() = default;

int64_t Grammar::min_output_bytes() const { return rule_min_[static_cast<size_t>(root_)]; }

int64_t Grammar::bytes() const {
  return static_cast<int64_t>(sizeof(Grammar) + rules_.capacity() * sizeof(GrammarRule) +
                              (rule_min_.capacity() + owner_.capacity() + dist_.capacity() + eps_.capacity()) * 4 + tail_.capacity() +
                              (eps_at_.capacity() + edges_at_.capacity() + calls_at_.capacity()) * 4 +
                              edges_.capacity() * sizeof(Nfa::Edge) + calls_.capacity() * sizeof(Nfa::Call)) +
         GrammarLazy::fixed_bytes(*this) + limits_.max_lazy_bytes + 64;
}

Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, std::vector<GrammarRule> rules, int32_t root,
                                                       const GrammarLimits& limits) {
  CompileMeter& meter = nfa.meter();
  if (meter.failed()) return meter.failure();
  if (static_cast<int64_t>(rules.size()) > limits.max_rules) {
    return limit_error("the grammar needs more than " + std::to_string(limits.max_rules) + " rules (the limit)");
  }
  const auto& states = nfa.states();
  const size_t n = states.size();
  size_t n_eps = 0, n_edges = 0, n_calls = 0;
  for (const Nfa::State& st : states) {
    n_eps += st.eps.size();
    n_edges += st.edges.size();
    n_calls += st.calls.size();
  }
  // The grammar's arrays (kept; charged again at admission by bytes()).
  const auto kept = static_cast<int64_t>(n * 4 * 6 + n + n_eps * 4 + n_edges * sizeof(Nfa::Edge) +
                                         n_calls * sizeof(Nfa::Call) + rules.size() * (sizeof(GrammarRule) + 4)) +
                    1024;
  if (!meter.charge(kept)) return meter.failure();
  struct Release {
    CompileMeter& m;
    int64_t b;
    ~Release() { m.release(b); }
  } release{meter, kept};
  std::shared_ptr<Grammar> g(new Grammar());
  g->limits_ = limits;
  g->root_ = root;
  g->owner_.assign(n, -1);
  g->tail_.assign(n, 0);
  if (!assign_owners(nfa, rules, g->owner_, g->tail_, meter)) return meter.failure();
  g->eps_at_.reserve(n + 1);
  g->edges_at_.reserve(n + 1);
  g->calls_at_.reserve(n + 1);
  g->eps_.reserve(n_eps);
  g->edges_.reserve(n_edges);
  g->calls_.reserve(n_calls);
  for (const Nfa::State& st : states) {
    g->eps_at_.push_back(static_cast<uint32_t>(g->eps_.size()));
    g->edges_at_.push_back(static_cast<uint32_t>(g->edges_.size()));
    g->calls_at_.push_back(static_cast<uint32_t>(g->calls_.size()));
    g->eps_.insert(g->eps_.end(), st.eps.begin(), st.eps.end());
    g->edges_.insert(g->edges_.end(), st.edges.begin(), st.edges.end());
    g->calls_.insert(g->calls_.end(), st.calls.begin(), st.calls.end());
  }
  g->eps_at_.push_back(static_cast<uint32_t>(g->eps_.size()));
  g->edges_at_.push_back(static_cast<uint32_t>(g->edges_.size()));
  g->calls_at_.push_back(static_cast<uint32_t>(g->calls_.size()));
  g->rules_ = std::move(rules);
  // Fewest bytes: passes in reverse state order (builders add states mostly
  // forwards) until nothing changes; calls read their rule's current minimum.
  g->dist_.assign(n, Grammar::kUnreachable);
  g->rule_min_.assign(g->rules_.size(), Grammar::kUnreachable);
  for (const GrammarRule& r : g->rules_) {
    g->dist_[static_cast<size_t>(r.end)] = 0;
    if (r.tail >= 0) g->dist_[static_cast<size_t>(r.tail_end)] = 0;
  }
  for (bool changed = true; changed;) {
    changed = false;
    if (!meter.step(static_cast<int64_t>(n + n_eps + n_edges + n_calls) + 1)) return meter.failure();
    for (size_t i = n; i-- > 0;) {
      const auto s = static_cast<int32_t>(i);
      int32_t best = g->dist_[i];
      for (int32_t t : g->eps(s)) best = std::min(best, g->dist(t));
      for (const Nfa::Edge& e : g->edges(s)) best = std::min(best, sat_add(1, g->dist(e.to)));
      for (const Nfa::Call& c : g->calls(s)) best = std::min(best, sat_add(g->rule_min(c.rule), g->dist(c.to)));
      if (best < g->dist_[i]) {
        g->dist_[i] = best;
        changed = true;
      }
    }
    for (size_t r = 0; r < g->rules_.size(); ++r) {
      const GrammarRule& rule = g->rules_[r];
      const int64_t later = std::max<int64_t>(0, rule.min - 1) * g->dist(rule.next);
      const int32_t m = sat_add(sat_add(g->dist(rule.first), later), rule.tail < 0 ? 0 : g->dist(rule.tail));
      if (m < g->rule_min_[r]) {
        g->rule_min_[r] = m;
        changed = true;
      }
    }
  }
  if (g->rule_min(root) >= Grammar::kUnreachable) {
    return make_error(ErrorCode::kInvalidArgument, "the grammar accepts no output at all");
  }
  if (!g->find_canonical_rules(meter)) return meter.failure();
  static std::atomic<uint64_t> next_id{1};
  g->id_ = next_id.fetch_add(1);
  g->lazy_ = std::make_unique<GrammarLazy>(*g);
  return std::shared_ptr<const Grammar>(std::move(g));
}

bool Grammar::find_canonical_rules(CompileMeter& meter) {
  const size_t n = owner_.size();
  canon_rule_.resize(rules_.size());
  canon_state_.resize(n);
  for (size_t s = 0; s < n; ++s) canon_state_[s] = static_cast<int32_t>(s);
  // Each rule's states in order, then its shape relative to its lowest state.
  std::vector<std::vector<int32_t>> members(rules_.size());
  for (size_t s = 0; s < n; ++s) {
    if (owner_[s] >= 0) members[static_cast<size_t>(owner_[s])].push_back(static_cast<int32_t>(s));
  }
  const auto transient = static_cast<int64_t>((n + eps_.size() + 3 * edges_.size() + 2 * calls_.size() +
                                               16 * rules_.size()) * 8 * 3);
  if (!meter.charge(transient)) return false;
  struct Release {
    CompileMeter& m;
    int64_t b;
    ~Release() { m.release(b); }
  } release{meter, transient};
  std::map<std::vector<int64_t>, int32_t> first_alike;
  std::vector<int64_t> shape;
  for (size_t r = 0; r < rules_.size(); ++r) {
    const std::vector<int32_t>& m = members[r];
    canon_rule_[r] = static_cast<int32_t>(r);
    if (m.empty()) continue;
    const int64_t base = m.front();
    const auto rel = [&](int32_t s) { return owner_[static_cast<size_t>(s)] == static_cast<int32_t>(r) ? s - base : -1 - int64_t{s}; };
    const GrammarRule& rule = rules_[r];
    shape.assign({static_cast<int64_t>(m.size()), rel(rule.first), rel(rule.next), rel(rule.end),
                  rule.tail < 0 ? -1 : rel(rule.tail), rule.tail_end < 0 ? -1 : rel(rule.tail_end)});
    for (int32_t s : m) {
      shape.push_back(s - base);
      shape.push_back(tail_[static_cast<size_t>(s)]);
      for (int32_t t : eps(s)) shape.push_back(rel(t));
      shape.push_back(-7);
      for (const Nfa::Edge& e : edges(s)) shape.insert(shape.end(), {e.lo, e.hi, rel(e.to)});
      shape.push_back(-7);
      for (const Nfa::Call& c : calls(s)) shape.insert(shape.end(), {c.rule, rel(c.to)});
      shape.push_back(-7);
    }
    if (!meter.step(static_cast<int64_t>(shape.size()))) return false;
    const auto [it, added] = first_alike.emplace(shape, static_cast<int32_t>(r));
    if (added) continue;
    const auto c = static_cast<size_t>(it->second);
    canon_rule_[r] = it->second;
    for (size_t k = 0; k < m.size(); ++k) canon_state_[static_cast<size_t>(m[k])] = members[c][k];
  }
  return true;
}

Result<std::shared_ptr<const Grammar>> compile_grammar(const Nfa& nfa, Nfa::Frag root, const GrammarLimits& limits) {
  return compile_grammar(nfa, {GrammarRule{root.start, root.start, root.end, 1, 1}}, 0, limits);
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
