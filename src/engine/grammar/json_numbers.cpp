// Digit-range automata for bounded JSON integers and numbers; format patterns.
#include "engine/grammar/json_numbers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace plimsoll {
namespace {

using Frag = Nfa::Frag;

constexpr int64_t kFreeMax = 999'999'999'999'999;  // 15 digits: a free side's bound
constexpr int64_t kMaxFractionDigits = 15;
constexpr int64_t kMaxExponentDigits = 2;

Frag digit(Nfa& nfa) { return nfa.byte_range('0', '9'); }

Frag digits_exactly(Nfa& nfa, size_t n) {
  Frag f = nfa.empty();
  for (size_t k = 0; k < n; ++k) f = nfa.seq(f, digit(nfa));
  return f;
}

// Up to `n` digits (nested optionals: n states, not 2^n).
Frag digits_upto(Nfa& nfa, int64_t n) {
  Frag tail = nfa.empty();
  for (int64_t k = 0; k < n; ++k) tail = nfa.optional(nfa.seq(digit(nfa), tail));
  return tail;
}

// Decimal strings of one length from `a` to `b` (a <= b), from digit i on.
// Recursion is at most 20 deep (the digits of a uint64).
Frag same_length(Nfa& nfa, const std::string& a, const std::string& b, size_t i) {
  if (i == a.size()) return nfa.empty();
  const auto byte = [](char c) { return static_cast<uint8_t>(c); };
  if (a[i] == b[i]) return nfa.seq(nfa.byte_range(byte(a[i]), byte(a[i])), same_length(nfa, a, b, i + 1));
  const size_t rest = a.size() - i - 1;
  const bool a_low = std::all_of(a.begin() + static_cast<std::ptrdiff_t>(i) + 1, a.end(), [](char c) { return c == '0'; });
  const bool b_high = std::all_of(b.begin() + static_cast<std::ptrdiff_t>(i) + 1, b.end(), [](char c) { return c == '9'; });
  std::vector<Frag> options;
  if (!a_low) {
    std::string top = a.substr(0, i + 1) + std::string(rest, '9');
    options.push_back(nfa.seq(nfa.byte_range(byte(a[i]), byte(a[i])), same_length(nfa, a, top, i + 1)));
  }
  const char lo = a_low ? a[i] : static_cast<char>(a[i] + 1);
  const char hi = b_high ? b[i] : static_cast<char>(b[i] - 1);
  if (lo <= hi) options.push_back(nfa.seq(nfa.byte_range(byte(lo), byte(hi)), digits_exactly(nfa, rest)));
  if (!b_high) {
    std::string bottom = b.substr(0, i + 1) + std::string(rest, '0');
    options.push_back(nfa.seq(nfa.byte_range(byte(b[i]), byte(b[i])), same_length(nfa, bottom, b, i + 1)));
  }
  return nfa.alt(options);
}

uint64_t pow10(size_t n) {
  uint64_t p = 1;
  for (size_t k = 0; k < n; ++k) p *= 10;
  return p;
}

// Non-negative integers in [a, b], no leading zeros.
Frag unsigned_range(Nfa& nfa, uint64_t a, uint64_t b) {
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  std::vector<Frag> options;
  for (size_t len = sa.size(); len <= sb.size(); ++len) {
    const uint64_t lo = len == sa.size() ? a : pow10(len - 1);
    const uint64_t hi = len == sb.size() ? b : pow10(len) - 1;
    if (lo <= hi) options.push_back(same_length(nfa, std::to_string(lo), std::to_string(hi), 0));
  }
  return options.size() == 1 ? options[0] : nfa.alt(options);
}

uint64_t magnitude(int64_t v) { return v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v); }

int64_t clamp_to_int64(long double v) {
  constexpr long double kTop = 9223372036854775807.0L;
  if (v >= kTop) return std::numeric_limits<int64_t>::max();
  if (v <= -kTop - 1) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

// The digit automaton of json_integer_multiples. Free states (no bound
// tight) are keyed by (k, t): exactly k more digits whose value is t mod m,
// live iff some k-digit string has it (t < 10^k); (0, 0) is the accept state.
// Tight states (a prefix equal to a bound's) are chains, a few per digit.
// Every state is made after its successors (depth <= 20, the digits of a
// uint64), so a dead end costs no state.
class MultiplesBuilder {
 public:
  MultiplesBuilder(Nfa& nfa, uint64_t m, int64_t max_states) : nfa_(nfa), m_(m), max_states_(max_states) {
    uint64_t p = 1 % m;
    for (size_t k = 0; k < pow10_mod_.size(); ++k) {
      pow10_mod_[k] = p;
      p = mul_mod(p, 10);
    }
  }
  ~MultiplesBuilder() { nfa_.meter().release(table_bytes_); }
  MultiplesBuilder(const MultiplesBuilder&) = delete;
  MultiplesBuilder& operator=(const MultiplesBuilder&) = delete;

  // The memo table ([pow2 >= 2 x max_states] slots, charged before it is
  // allocated) and the accept state. False: the meter's failure (the state
  // limit, even 0, shows in over_limit()).
  bool init() {
    size_t slots = 16;
    while (static_cast<int64_t>(slots) < 2 * max_states_) {
      slots *= 2;
      --shift_;
    }
    const auto bytes = static_cast<int64_t>(slots * sizeof(Slot)) + 32;
    if (!nfa_.meter().charge(bytes)) return false;
    table_bytes_ = bytes;
    table_.assign(slots, Slot{});
    accept_ = new_state();
    return !nfa_.failed();
  }
  // The entry states of the multiples in [a, b] (non-negative), one per length with any.
  void add_unsigned(uint64_t a, uint64_t b, std::vector<int32_t>& roots) {
    const std::string sa = std::to_string(a), sb = std::to_string(b);
    for (size_t len = sa.size(); len <= sb.size() && !stopped(); ++len) {
      const uint64_t lo = len == sa.size() ? a : pow10(len - 1);
      const uint64_t hi = len == sb.size() ? b : pow10(len) - 1;
      if (lo > hi) continue;
      const int32_t r = tight(std::to_string(lo), std::to_string(hi), 0, true, true, 0);
      if (r >= 0) roots.push_back(r);
    }
  }
  int32_t accept() const { return accept_; }
  int64_t states() const { return states_; }
  bool over_limit() const { return over_limit_; }
  bool stopped() const { return over_limit_ || nfa_.failed(); }

 private:
  struct Slot {
    uint64_t t = 0;
    int32_t k = -1;  // -1: empty
    int32_t state = -1;
  };

  uint64_t mul_mod(uint64_t a, uint64_t b) const {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % m_);
  }
  // -x mod m, x < m.
  uint64_t neg_mod(uint64_t x) const { return x == 0 ? 0 : m_ - x; }
  static bool live(size_t k, uint64_t t) { return k >= 19 || t < pow10(k); }

  int32_t new_state() {
    if (stopped()) return -1;
    if (++states_ > max_states_) {
      over_limit_ = true;
      return -1;
    }
    const int32_t s = nfa_.add_state();
    return nfa_.failed() ? -1 : s;
  }
  // A state with digit d going to next[d] (-1: none), runs of one target as
  // one range; -1 when every digit is dead.
  int32_t state_to(const std::array<int32_t, 10>& next) {
    if (stopped() || std::all_of(next.begin(), next.end(), [](int32_t n) { return n < 0; })) return -1;
    const int32_t s = new_state();
    if (s < 0) return -1;
    for (int d = 0; d < 10;) {
      int e = d;
      while (e + 1 < 10 && next[static_cast<size_t>(e + 1)] == next[static_cast<size_t>(d)]) ++e;
      if (next[static_cast<size_t>(d)] >= 0) {
        nfa_.add_range(s, static_cast<uint8_t>('0' + d), static_cast<uint8_t>('0' + e), next[static_cast<size_t>(d)]);
      }
      d = e + 1;
    }
    return s;
  }

  // Exactly k digits whose value is t mod m (live(k, t) holds).
  int32_t free_state(size_t k, uint64_t t) {
    if (stopped()) return -1;  // (nothing is memoized past a stop: no walk of the whole tree)
    if (k == 0) return accept_;  // live: t == 0
    Slot* slot = find(k, t);
    if (slot->k >= 0) return slot->state;
    std::array<int32_t, 10> next{};
    const uint64_t place = pow10_mod_[k - 1];
    for (uint64_t d = 0; d < 10; ++d) {
      const uint64_t rest = (t + neg_mod(mul_mod(d, place))) % m_;  // t - d x 10^(k-1)
      next[d] = live(k - 1, rest) ? free_state(k - 1, rest) : -1;
    }
    const int32_t s = state_to(next);
    if (s < 0) return -1;
    slot = find(k, t);  // (the recursion may have filled others; slots never move)
    *slot = Slot{t, static_cast<int32_t>(k), s};
    return s;
  }

  // Digits i.. of a number of a.size() digits in [a, b] whose prefix so far
  // is r mod m, tight to a's / b's prefix (then the next digit is bounded).
  int32_t tight(const std::string& a, const std::string& b, size_t i, bool lo_tight, bool hi_tight, uint64_t r) {
    const size_t left = a.size() - i;
    if (left == 0) return r == 0 ? accept_ : -1;
    // A bound whose rest is 0...0 (a) or 9...9 (b) bounds nothing: the free
    // states serve (so 10^(L-1)..10^L - 1, every length of an unbounded side, costs no chain).
    const auto rest_is = [&](const std::string& x, char c) {
      return std::all_of(x.begin() + static_cast<std::ptrdiff_t>(i), x.end(), [c](char d) { return d == c; });
    };
    lo_tight = lo_tight && !rest_is(a, '0');
    hi_tight = hi_tight && !rest_is(b, '9');
    if (!lo_tight && !hi_tight) {
      const uint64_t t = neg_mod(mul_mod(r, pow10_mod_[left]));
      return live(left, t) ? free_state(left, t) : -1;
    }
    const int lo = lo_tight ? a[i] - '0' : 0;
    const int hi = hi_tight ? b[i] - '0' : 9;
    std::array<int32_t, 10> next;
    next.fill(-1);
    for (int d = lo; d <= hi && !stopped(); ++d) {
      const uint64_t r2 = (mul_mod(r, 10) + static_cast<uint64_t>(d)) % m_;
      next[static_cast<size_t>(d)] = tight(a, b, i + 1, lo_tight && d == lo, hi_tight && d == hi, r2);
    }
    return state_to(next);
  }

  // Open addressing: at most max_states entries in >= 2 x max_states slots,
  // hashed by the product's top bits (t is often a multiple of 2^j: its low bits are not).
  Slot* find(size_t k, uint64_t t) {
    const size_t mask = table_.size() - 1;
    size_t at = static_cast<size_t>(((t ^ (static_cast<uint64_t>(k) << 58)) * 0x9E3779B97F4A7C15ULL) >> shift_);
    while (table_[at].k >= 0 && !(table_[at].k == static_cast<int32_t>(k) && table_[at].t == t)) at = (at + 1) & mask;
    return &table_[at];
  }

  Nfa& nfa_;
  uint64_t m_;
  int64_t max_states_;
  int64_t states_ = 0;
  bool over_limit_ = false;
  int32_t accept_ = -1;
  std::array<uint64_t, 21> pow10_mod_{};  // [k] 10^k mod m
  std::vector<Slot> table_;
  int shift_ = 60;  // 64 - log2(table_.size())
  int64_t table_bytes_ = 0;
};

// 1 to 15 fraction digits, the last not 0 (so p.fff lies strictly inside (p, p + 1)).
Frag strict_fraction(Nfa& nfa) {
  return nfa.seq(nfa.seq(nfa.literal("."), digits_upto(nfa, kMaxFractionDigits - 1)), nfa.byte_range('1', '9'));
}

}  // namespace

Frag json_integer_range(Nfa& nfa, int64_t lo, int64_t hi) {
  std::vector<Frag> options;
  if (hi >= 0) options.push_back(unsigned_range(nfa, static_cast<uint64_t>(std::max<int64_t>(lo, 0)), static_cast<uint64_t>(hi)));
  if (lo < 0) {
    const uint64_t nearest = hi < 0 ? magnitude(hi) : 1;
    options.push_back(nfa.seq(nfa.literal("-"), unsigned_range(nfa, nearest, magnitude(lo))));
  }
  return options.size() == 1 ? options[0] : nfa.alt(options);
}

Result<IntegerMultiples> json_integer_multiples(Nfa& nfa, int64_t lo, int64_t hi, int64_t m, int64_t max_states) {
  const auto refuse = [&](const std::string& what) {
    return make_error(ErrorCode::kInvalidArgument, "`multipleOf` " + std::to_string(m) + " between " +
                                                       std::to_string(lo) + " and " + std::to_string(hi) + " " + what);
  };
  MultiplesBuilder b(nfa, static_cast<uint64_t>(m), max_states);
  if (!b.init()) return nfa.meter().failure();
  std::vector<int32_t> positive, negative;
  if (hi >= 0) b.add_unsigned(static_cast<uint64_t>(std::max<int64_t>(lo, 0)), static_cast<uint64_t>(hi), positive);
  if (lo < 0) b.add_unsigned(hi < 0 ? magnitude(hi) : 1, magnitude(lo), negative);
  if (nfa.failed()) return nfa.meter().failure();
  if (b.over_limit()) {
    return refuse("needs more than " + std::to_string(max_states) + " automaton states");
  }
  if (positive.empty() && negative.empty()) return refuse("has no multiple in that range");
  const int32_t start = nfa.add_state();
  for (const int32_t r : positive) nfa.add_epsilon(start, r);
  if (!negative.empty()) {
    const Frag minus = nfa.literal("-");
    nfa.add_epsilon(start, minus.start);
    for (const int32_t r : negative) nfa.add_epsilon(minus.end, r);
  }
  if (nfa.failed()) return nfa.meter().failure();
  return IntegerMultiples{Frag{start, b.accept()}, b.states()};
}

std::optional<std::pair<int64_t, int64_t>> integer_bounds(const std::optional<NumberBound>& lo,
                                                          const std::optional<NumberBound>& hi) {
  int64_t a = -kFreeMax, b = kFreeMax;
  if (lo) a = clamp_to_int64(lo->exclusive ? std::floor(lo->value) + 1 : std::ceil(lo->value));
  if (hi) b = clamp_to_int64(hi->exclusive ? std::ceil(hi->value) - 1 : std::floor(hi->value));
  if (!lo && b < a) a = std::numeric_limits<int64_t>::min();
  if (!hi && b < a) b = std::numeric_limits<int64_t>::max();
  if (a > b) return std::nullopt;
  return std::make_pair(a, b);
}

std::optional<Frag> json_number_bounded(Nfa& nfa, const std::optional<NumberBound>& lo,
                                        const std::optional<NumberBound>& hi) {
  std::vector<Frag> options;
  if (const auto r = integer_bounds(lo, hi)) options.push_back(json_integer_range(nfa, r->first, r->second));
  // p.fff in (p, p + 1): lo <= p and p + 1 <= hi.
  const int64_t pos_lo = std::max<int64_t>(0, lo ? clamp_to_int64(std::ceil(lo->value)) : 0);
  const int64_t pos_hi = hi ? clamp_to_int64(std::floor(hi->value) - 1) : kFreeMax;
  if (pos_lo <= pos_hi) options.push_back(nfa.seq(json_integer_range(nfa, pos_lo, pos_hi), strict_fraction(nfa)));
  // -p.fff in (-(p + 1), -p): lo <= -(p + 1) and -p <= hi.
  const int64_t neg_lo = std::max<int64_t>(0, hi ? clamp_to_int64(std::ceil(-hi->value)) : 0);
  const int64_t neg_hi = lo ? clamp_to_int64(std::floor(-lo->value) - 1) : kFreeMax;
  if (neg_lo <= neg_hi) {
    options.push_back(nfa.seq(nfa.literal("-"), nfa.seq(json_integer_range(nfa, neg_lo, neg_hi), strict_fraction(nfa))));
  }
  if (options.empty()) return std::nullopt;
  return options.size() == 1 ? options[0] : nfa.alt(options);
}

Frag json_number_any(Nfa& nfa, bool minus) {
  const Frag positive = nfa.seq(nfa.byte_range('1', '9'), digits_upto(nfa, 14));
  Frag integer = nfa.alt({nfa.literal("0"), positive});
  if (minus) integer = nfa.seq(nfa.optional(nfa.literal("-")), integer);
  const Frag frac = nfa.optional(nfa.seq(nfa.literal("."), nfa.seq(digit(nfa), digits_upto(nfa, kMaxFractionDigits - 1))));
  const Frag sign = nfa.optional(nfa.alt({nfa.literal("+"), nfa.literal("-")}));
  const Frag exp = nfa.optional(nfa.seq(nfa.seq(nfa.alt({nfa.literal("e"), nfa.literal("E")}), sign),
                                        nfa.seq(digit(nfa), digits_upto(nfa, kMaxExponentDigits - 1))));
  return nfa.seq(nfa.seq(integer, frac), exp);
}

namespace {

// IPv6: eight groups, or fewer around one "::" (left + right <= 7).
std::string ipv6_pattern() {
  const std::string h = "[0-9a-fA-F]{1,4}";
  std::string p = "(" + h + ":){7}" + h;
  for (int left = 0; left <= 7; ++left) {
    for (int right = 0; left + right <= 7; ++right) {
      std::string opt;
      for (int k = 0; k < left; ++k) opt += (k ? ":" : "") + h;
      opt += "::";
      for (int k = 0; k < right; ++k) opt += (k ? ":" : "") + h;
      p += "|" + opt;
    }
  }
  return p;
}

}  // namespace

std::optional<std::string> format_pattern(const std::string& f) {
  const std::string date = R"(\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01]))";
  const std::string time = R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  const std::string octet = R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))";
  const std::string label = R"([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)";
  const std::string n = R"(\d{1,9})";
  if (f == "date") return date;
  if (f == "time") return time;
  if (f == "date-time") return date + "T" + time;
  if (f == "duration") {
    const std::string t = "T(" + n + "H(" + n + "M)?(" + n + "S)?|" + n + "M(" + n + "S)?|" + n + "S)";
    const std::string d = "(" + n + "Y(" + n + "M)?(" + n + "D)?|" + n + "M(" + n + "D)?|" + n + "D)";
    return "P(" + n + "W|" + d + "(" + t + ")?|" + t + ")";
  }
  if (f == "uuid") return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
  // The local part: dot-separated atoms (valid under ajv's fast and full modes).
  if (f == "email") return R"([A-Za-z0-9_%+-]+(\.[A-Za-z0-9_%+-]+)*@)" + label + R"((\.)" + label + ")+";
  if (f == "hostname") return label + R"((\.)" + label + ")*";
  if (f == "ipv4") return "(" + octet + R"(\.){3})" + octet;
  if (f == "ipv6") return ipv6_pattern();
  if (f == "uri") return R"([A-Za-z][A-Za-z0-9+.-]*:[A-Za-z0-9._~%!$&'()*+,;=:@/?#-]+)";
  return std::nullopt;
}

}  // namespace plimsoll
