// Regular expression -> NFA: a recursive-descent parser into a small tree,
// emitted as Thompson fragments (a repeat emits its child once per copy).
// Recursion is bounded by the group nesting limit (a quantifier cannot follow
// a quantifier, as in Python and JavaScript), and every tree node is charged
// to the compile's meter before it is made.
#include <array>
#include <cctype>
#include <memory>
#include <string>

#include "core/work_control.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll {
namespace {

using Frag = Nfa::Frag;

constexpr int64_t kMaxRepeatCount = 1000;
constexpr int kMaxNesting = 64;

struct Node {
  enum Kind { kEmpty, kSet, kLiteral, kConcat, kAlt, kRepeat } kind = kEmpty;
  std::array<bool, 128> ascii{};  // kSet: ASCII members
  bool multibyte = false;         // kSet: also every multi-byte UTF-8 character
  std::string bytes;              // kLiteral
  std::vector<std::unique_ptr<Node>> children;
  int64_t min = 0, max = -1;      // kRepeat; max -1 = unbounded
};
using NodePtr = std::unique_ptr<Node>;

// What one tree node holds on the heap (the node, malloc's header and
// rounding, its slot in the parent's vector as that vector doubles).
constexpr int64_t kNodeBytes = static_cast<int64_t>(sizeof(Node)) + 32 + 24;

class Parser {
 public:
  Parser(std::string_view p, CompileMeter& meter) : p_(p), meter_(meter) {}
  ~Parser() { meter_.release(charged_); }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // The tree; the Parser must outlive it (it holds the tree's charge).
  Result<NodePtr> parse() {
    if (!p_.empty() && p_.front() == '^') ++pos_;
    PLIMSOLL_ASSIGN(NodePtr n, alternation(0));
    if (pos_ < p_.size()) return bad("unexpected `)`");
    return n;
  }

 private:
  // A new node, charged first.
  Result<NodePtr> node(Node::Kind kind) {
    const int64_t bytes = kNodeBytes;
    if (!meter_.charge(bytes) || !meter_.step()) return meter_.failure();
    charged_ += bytes;
    auto n = std::make_unique<Node>();
    n->kind = kind;
    return n;
  }

  Error bad(const std::string& what) const {
    return make_error(ErrorCode::kInvalidArgument, "regex at offset " + std::to_string(pos_) + ": " + what);
  }
  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return p_[pos_]; }

  Result<NodePtr> alternation(int nesting) {
    if (nesting > kMaxNesting) return bad("groups nested deeper than " + std::to_string(kMaxNesting));
    PLIMSOLL_ASSIGN(NodePtr alt, node(Node::kAlt));
    while (true) {
      PLIMSOLL_ASSIGN(NodePtr c, concat(nesting));
      alt->children.push_back(std::move(c));
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    if (alt->children.size() == 1) return std::move(alt->children[0]);
    return alt;
  }

  Result<NodePtr> concat(int nesting) {
    PLIMSOLL_ASSIGN(NodePtr cat, node(Node::kConcat));
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && pos_ + 1 == p_.size()) {
        ++pos_;
        break;
      }
      PLIMSOLL_ASSIGN(NodePtr a, atom(nesting));
      PLIMSOLL_ASSIGN(NodePtr q, quantified(std::move(a)));
      cat->children.push_back(std::move(q));
    }
    return cat;
  }

  Result<int64_t> number() {
    int64_t v = 0;
    const size_t begin = pos_;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeatCount) return bad("repeat count over the limit of " + std::to_string(kMaxRepeatCount));
      ++pos_;
    }
    if (pos_ == begin) return bad("expected a number in `{}`");
    return v;
  }

  static bool is_quantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

  // `a` with at most one quantifier (and its lazy `?` or possessive `+`).
  Result<NodePtr> quantified(NodePtr a) {
    if (at_end() || !is_quantifier(peek())) return a;
    int64_t min = 0, max = -1;
    const char c = peek();
    if (c == '*') {
      ++pos_;
    } else if (c == '+') {
      min = 1;
      ++pos_;
    } else if (c == '?') {
      max = 1;
      ++pos_;
    } else {
      ++pos_;
      PLIMSOLL_ASSIGN(min, number());
      max = min;
      if (!at_end() && peek() == ',') {
        ++pos_;
        max = -1;
        if (!at_end() && peek() != '}') {
          PLIMSOLL_ASSIGN(max, number());
        }
      }
      if (at_end() || peek() != '}') return bad("expected `}`");
      ++pos_;
      if (max >= 0 && max < min) return bad("repeat {n,m} with m < n");
    }
    if (!at_end() && (peek() == '?' || peek() == '+')) ++pos_;  // lazy / possessive: same language
    if (!at_end() && is_quantifier(peek())) {
      return bad("a quantifier cannot follow a quantifier (multiple repeat); put the first in a group `(?:...)`");
    }
    PLIMSOLL_ASSIGN(NodePtr r, node(Node::kRepeat));
    r->min = min;
    r->max = max;
    r->children.push_back(std::move(a));
    return r;
  }

  Result<NodePtr> set_of(const std::array<bool, 128>& ascii, bool multibyte) {
    PLIMSOLL_ASSIGN(NodePtr n, node(Node::kSet));
    n->ascii = ascii;
    n->multibyte = multibyte;
    return n;
  }
  Result<NodePtr> literal_of(std::string bytes) {
    PLIMSOLL_ASSIGN(NodePtr n, node(Node::kLiteral));
    n->bytes = std::move(bytes);
    return n;
  }
  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // Class escapes: \d \w \s and their complements. Returns false when `c` is not one.
  static bool class_escape(char c, std::array<bool, 128>* set, bool* multibyte) {
    std::array<bool, 128> s{};
    const char lower = static_cast<char>(c | 0x20);
    if (lower == 'd') {
      for (int b = '0'; b <= '9'; ++b) s[static_cast<size_t>(b)] = true;
    } else if (lower == 'w') {
      for (int b = 0; b < 128; ++b) s[static_cast<size_t>(b)] = std::isalnum(b) || b == '_';
    } else if (lower == 's') {
      for (char b : std::string(" \t\n\r\f\v")) s[static_cast<size_t>(b)] = true;
    } else {
      return false;
    }
    const bool negated = c != lower;
    for (size_t b = 0; b < 128; ++b) (*set)[b] = (*set)[b] || (negated ? !s[b] : s[b]);
    if (negated) *multibyte = true;
    return true;
  }

  // A single escaped character (after the backslash).
  Result<char> escaped_char() {
    if (at_end()) return bad("trailing backslash");
    const char c = p_[pos_++];
    switch (c) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return '\0';
      case 'x': {
        const int hi = pos_ + 2 <= p_.size() ? hex_digit(p_[pos_]) : -1;
        const int lo = hi >= 0 ? hex_digit(p_[pos_ + 1]) : -1;
        if (lo < 0) return bad("`\\x` needs two hex digits");
        const int v = hi * 16 + lo;
        pos_ += 2;
        if (v >= 0x80) return bad("`\\x` escapes above 7F are not supported");
        return static_cast<char>(v);
      }
      default:
        if (std::isalnum(static_cast<unsigned char>(c))) return bad(std::string("escape `\\") + c + "` is not supported");
        return c;
    }
  }

  Result<NodePtr> bracket() {
    std::array<bool, 128> set{};
    bool multibyte = false;
    bool negated = false;
    if (!at_end() && peek() == '^') {
      negated = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (at_end()) return bad("unterminated `[`");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      char lo;
      if (peek() == '\\') {
        ++pos_;
        if (!at_end() && class_escape(peek(), &set, &multibyte)) {
          ++pos_;
          continue;
        }
        PLIMSOLL_ASSIGN(lo, escaped_char());
      } else {
        lo = p_[pos_++];
      }
      if (static_cast<unsigned char>(lo) >= 0x80) return bad("non-ASCII characters in `[...]` are not supported");
      char hi = lo;
      if (pos_ + 1 < p_.size() && peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          PLIMSOLL_ASSIGN(hi, escaped_char());
        } else {
          hi = p_[pos_++];
        }
        if (static_cast<unsigned char>(hi) >= 0x80) return bad("non-ASCII characters in `[...]` are not supported");
        if (hi < lo) return bad("range out of order in `[...]`");
      }
      for (int b = lo; b <= hi; ++b) set[static_cast<size_t>(b)] = true;
    }
    if (negated) {
      for (bool& b : set) b = !b;
      multibyte = !multibyte;
    }
    return set_of(set, multibyte);
  }

  Result<NodePtr> atom(int nesting) {
    const char c = p_[pos_++];
    switch (c) {
      case '(': {
        if (!at_end() && peek() == '?') {
          if (pos_ + 1 < p_.size() && p_[pos_ + 1] == ':') {
            pos_ += 2;
          } else {
            return bad("group flags `(?` other than `(?:` are not supported");
          }
        }
        PLIMSOLL_ASSIGN(NodePtr inner, alternation(nesting + 1));
        if (at_end() || peek() != ')') return bad("missing `)`");
        ++pos_;
        return inner;
      }
      case '[':
        return bracket();
      case '.': {
        std::array<bool, 128> set;
        set.fill(true);
        set['\n'] = false;
        return set_of(set, true);
      }
      case '\\': {
        if (at_end()) return bad("trailing backslash");
        std::array<bool, 128> set{};
        bool multibyte = false;
        if (class_escape(peek(), &set, &multibyte)) {
          ++pos_;
          return set_of(set, multibyte);
        }
        if (peek() == 'b' || peek() == 'B' || peek() == 'A' || peek() == 'z' || peek() == 'Z') {
          return bad("anchors and word boundaries are not supported");
        }
        PLIMSOLL_ASSIGN(const char e, escaped_char());
        return literal_of(std::string(1, e));
      }
      case '*': case '+': case '?': case '{':
        --pos_;
        return bad("nothing to repeat");
      case '^': case '$':
        --pos_;
        return bad("`^` and `$` are only supported at the ends of the pattern");
      default: {
        std::string bytes(1, c);
        // A multi-byte UTF-8 character is one atom (a quantifier repeats all of it).
        const auto lead = static_cast<unsigned char>(c);
        const size_t extra = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
        for (size_t k = 0; k < extra && !at_end(); ++k) bytes += p_[pos_++];
        return literal_of(std::move(bytes));
      }
    }
  }

  std::string_view p_;
  CompileMeter& meter_;
  int64_t charged_ = 0;
  size_t pos_ = 0;
};

// How `b` is written inside a JSON string: itself, or its escape.
std::string json_escaped(unsigned char b) {
  switch (b) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
  }
  if (b >= 0x20) return std::string(1, static_cast<char>(b));
  static const char* kHex = "0123456789abcdef";
  return std::string("\\u00") + kHex[b >> 4] + kHex[b & 15];
}
bool needs_json_escape(int b) { return b < 0x20 || b == '"' || b == '\\'; }

// Thompson fragments of the tree. json_escape: the bytes as a JSON string's
// contents write them (a `"` as \", a newline as \n), so the decoded text matches.
class Emitter {
 public:
  Emitter(Nfa& nfa, bool json_escape) : nfa_(nfa), json_escape_(json_escape) {}

  Frag emit(const Node& n) {
    if (nfa_.failed()) return {};
    switch (n.kind) {
      case Node::kEmpty:
        return nfa_.empty();
      case Node::kLiteral:
        return nfa_.literal(json_escape_ ? escaped(n.bytes) : n.bytes);
      case Node::kSet:
        return set(n);
      case Node::kConcat: {
        Frag out = nfa_.empty();
        for (const auto& c : n.children) out = nfa_.seq(out, emit(*c));
        return out;
      }
      case Node::kAlt: {
        std::vector<Frag> options;
        for (const auto& c : n.children) options.push_back(emit(*c));
        return nfa_.alt(options);
      }
      case Node::kRepeat: {
        const Node& c = *n.children[0];
        Frag out = nfa_.empty();
        for (int64_t k = 0; k < n.min && !nfa_.failed(); ++k) out = nfa_.seq(out, emit(c));
        if (n.max < 0) return nfa_.seq(out, nfa_.star(emit(c)));
        Frag tail = nfa_.empty();
        for (int64_t k = n.min; k < n.max && !nfa_.failed(); ++k) tail = nfa_.optional(nfa_.seq(emit(c), tail));
        return nfa_.seq(out, tail);
      }
    }
    return nfa_.empty();
  }

 private:
  static std::string escaped(const std::string& bytes) {
    std::string out;
    for (const char c : bytes) out += json_escaped(static_cast<unsigned char>(c));
    return out;
  }

  Frag set(const Node& n) {
    std::array<bool, 128> plain = n.ascii;
    std::vector<Frag> options;
    if (json_escape_) {
      for (int b = 0; b < 128; ++b) {
        if (!plain[static_cast<size_t>(b)] || !needs_json_escape(b)) continue;
        plain[static_cast<size_t>(b)] = false;
        options.push_back(nfa_.literal(json_escaped(static_cast<unsigned char>(b))));
      }
    }
    if (n.multibyte) {
      options.push_back(utf8_char(nfa_, plain));
      return nfa_.alt(options);
    }
    for (int b = 0; b < 128;) {
      if (!plain[static_cast<size_t>(b)]) {
        ++b;
        continue;
      }
      int e = b;
      while (e + 1 < 128 && plain[static_cast<size_t>(e + 1)]) ++e;
      options.push_back(nfa_.byte_range(static_cast<uint8_t>(b), static_cast<uint8_t>(e)));
      b = e + 1;
    }
    if (options.empty()) {  // matches nothing: a state with no way out
      const int32_t a = nfa_.add_state();
      return {a, nfa_.add_state()};
    }
    return nfa_.alt(options);
  }

  Nfa& nfa_;
  bool json_escape_;
};

// `$` as the pattern's last character, not escaped (an even run of backslashes before it).
bool ends_anchored(std::string_view p) {
  if (p.empty() || p.back() != '$') return false;
  size_t slashes = 0;
  for (size_t i = p.size() - 1; i > 0 && p[i - 1] == '\\'; --i) ++slashes;
  return slashes % 2 == 0;
}

}  // namespace

Result<std::shared_ptr<const Grammar>> grammar_from_regex(std::string_view pattern, const GrammarLimits& limits) {
  if (static_cast<int64_t>(pattern.size()) > limits.max_source_bytes) {
    return make_error(ErrorCode::kInvalidArgument, "the regex is " + std::to_string(pattern.size()) +
                                                       " bytes, over the limit of " +
                                                       std::to_string(limits.max_source_bytes));
  }
  const WorkspaceLease lease;  // one of the preparations' compile workspaces
  PLIMSOLL_TRY(lease.status());
  CompileMeter meter(limits);
  Parser parser(pattern, meter);
  PLIMSOLL_ASSIGN(NodePtr tree, parser.parse());
  Nfa nfa(limits, meter);
  const Frag f = Emitter(nfa, false).emit(*tree);
  return compile_grammar(nfa, f, limits);
}

Result<JsonStringPattern> json_string_pattern(Nfa& nfa, std::string_view pattern) {
  Parser parser(pattern, nfa.meter());
  PLIMSOLL_ASSIGN(NodePtr tree, parser.parse());
  JsonStringPattern out;
  out.body = Emitter(nfa, true).emit(*tree);
  out.anchored_start = !pattern.empty() && pattern.front() == '^';
  out.anchored_end = ends_anchored(pattern);
  return out;
}

}  // namespace plimsoll
