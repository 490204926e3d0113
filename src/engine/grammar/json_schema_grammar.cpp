// JSON schema -> grammar rules (see grammar_sources.h for the subset). Each
// $ref target, object, array, bounded string and free-form value is a rule
// entered by a call, so recursion and repeated references cost one rule, not
// a copy; counted repetition (maxLength, maxItems) is a counted rule.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "core/work_control.h"
#include "engine/grammar/grammar_sources.h"
#include "engine/grammar/json_numbers.h"

namespace plimsoll {
namespace {

using json = nlohmann::ordered_json;  // properties are written in the schema's key order
using Frag = Nfa::Frag;

constexpr int kMaxSchemaDepth = 32;  // nested subschemas within one rule's schema
constexpr int64_t kMaxIndent = 12;

Error bad(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "schema at " + (path.empty() ? std::string("/") : path) + ": " + what);
}

// Keywords that only annotate (ignored), and those compiled below.
const std::set<std::string>& known_keywords() {
  static const std::set<std::string> k = {
      "title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated", "readOnly",
      "writeOnly", "strict", "name", "$defs", "definitions", "required", "additionalProperties", "properties",
      "type", "items", "prefixItems", "minItems", "maxItems", "enum", "const", "anyOf", "oneOf", "allOf", "$ref",
      "minLength", "maxLength", "nullable", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
      "uniqueItems", "pattern", "format", "multipleOf"};
  return k;
}

class SchemaCompiler {
 public:
  SchemaCompiler(Nfa& nfa, std::vector<GrammarRule>& rules, const GrammarLimits& limits)
      : nfa_(nfa), rules_(rules), limits_(limits) {}

  // Whitespace between tokens: nothing, one space, or a newline and an indent
  // of up to kMaxIndent spaces or tabs (llama.cpp's JSON grammar does the
  // same), so a model cannot spend its tokens on whitespace.
  Frag ws() {
    Frag indent = nfa_.empty();
    for (int64_t k = 0; k < kMaxIndent; ++k) {
      indent = nfa_.optional(nfa_.seq(nfa_.alt({nfa_.byte_range(' ', ' '), nfa_.byte_range('\t', '\t')}), indent));
    }
    return nfa_.optional(nfa_.alt({lit(" "), nfa_.seq(lit("\n"), indent)}));
  }

  // One JSON value under `schema` (root: what its $refs resolve against), as
  // a call of a new rule; the rules it needs are compiled by finish().
  Result<Frag> top(const json& schema, const json& root, const std::string& path) {
    const int32_t r = rule_for(&schema, &root, path);
    PLIMSOLL_TRY(finish());
    return nfa_.call(r);
  }
  // A rule for free-form JSON objects (json_object).
  int32_t any_object_rule() {
    any_value_rule();
    return any_object_;
  }

 private:
  struct Pending {
    int32_t rule;
    const json* schema;
    const json* root;
    std::string path;
  };

  Frag lit(const std::string& s) { return nfa_.literal(s); }
  Frag seq(std::initializer_list<Frag> parts) {
    Frag out = nfa_.empty();
    for (const Frag& p : parts) out = nfa_.seq(out, p);
    return out;
  }
  // item (sep item)*, with the item built once.
  Frag sep_plus(Frag item, Frag sep) {
    const int32_t e = nfa_.add_state();
    nfa_.add_epsilon(item.end, sep.start);
    nfa_.add_epsilon(sep.end, item.start);
    nfa_.add_epsilon(item.end, e);
    return {item.start, e};
  }
  Frag hex() { return nfa_.alt({nfa_.byte_range('0', '9'), nfa_.byte_range('a', 'f'), nfa_.byte_range('A', 'F')}); }

  // A new rule: entry and exit states now, the body linked by the caller.
  int32_t new_rule(int64_t min = 1, int64_t max = 1) {
    GrammarRule r;
    r.first = nfa_.add_state();
    r.next = r.first;
    r.end = nfa_.add_state();
    r.min = min;
    r.max = max;
    rules_.push_back(r);
    return static_cast<int32_t>(rules_.size() - 1);
  }
  void set_tail(int32_t rule, Frag tail) {
    rules_[static_cast<size_t>(rule)].tail = tail.start;
    rules_[static_cast<size_t>(rule)].tail_end = tail.end;
  }
  void link(int32_t rule, Frag body) {
    nfa_.add_epsilon(rules_[static_cast<size_t>(rule)].first, body.start);
    nfa_.add_epsilon(body.end, rules_[static_cast<size_t>(rule)].end);
  }
  // The rule that writes `schema`, compiled later (one per schema node).
  int32_t rule_for(const json* schema, const json* root, const std::string& path) {
    // A schema that is only a $ref is its target's rule (no frame of its own).
    for (int hops = 0; hops < kMaxSchemaDepth && root == root_ && only_ref(*schema); ++hops) {
      Result<const json*> target = resolve(schema->at("$ref"), path);
      if (!target.ok()) break;  // value() reports it
      schema = *target;
    }
    const auto it = rule_of_.find(schema);
    if (it != rule_of_.end()) return it->second;
    const int32_t r = new_rule();
    rule_of_[schema] = r;
    pending_.push_back({r, schema, root, path});
    return r;
  }
  static bool only_ref(const json& s) {
    if (!s.is_object() || !s.contains("$ref")) return false;
    static const std::set<std::string> notes = {"$ref", "title", "description", "default", "examples", "$comment",
                                                "deprecated", "readOnly", "writeOnly"};
    for (const auto& [key, v] : s.items()) {
      if (!notes.count(key)) return false;
    }
    return true;
  }
  Status finish() {
    while (!pending_.empty()) {
      const Pending p = pending_.front();
      pending_.pop_front();
      if (static_cast<int64_t>(rules_.size()) > limits_.max_rules) {
        return bad(p.path, "the schema needs more than " + std::to_string(limits_.max_rules) + " rules (the limit)");
      }
      root_ = p.root;
      PLIMSOLL_ASSIGN(const Frag body, value(*p.schema, p.path, 0));
      link(p.rule, body);
      if (nfa_.failed()) return nfa_.meter().failure();
    }
    return Status::ok_status();
  }

  // One character of a JSON string's contents.
  Frag string_char() {
    std::array<bool, 128> ascii{};
    for (int b = 0x20; b < 0x80; ++b) ascii[static_cast<size_t>(b)] = b != '"' && b != '\\';
    const Frag plain = utf8_char(nfa_, ascii);
    // \uXXXX without lone surrogates (strict parsers refuse those).
    const Frag u = nfa_.alt({seq({nfa_.alt({nfa_.byte_range('0', '9'), nfa_.byte_range('A', 'C'), nfa_.byte_range('a', 'c')}),
                                  hex(), hex(), hex()}),
                             seq({nfa_.alt({lit("D"), lit("d")}), nfa_.byte_range('0', '7'), hex(), hex()}),
                             seq({nfa_.alt({nfa_.byte_range('E', 'F'), nfa_.byte_range('e', 'f')}), hex(), hex(), hex()})});
    std::vector<Frag> esc;
    for (char c : std::string("\"\\/bfnrt")) esc.push_back(lit(std::string(1, c)));
    esc.push_back(seq({lit("u"), u}));
    return nfa_.alt({plain, seq({lit("\\"), nfa_.alt(esc)})});
  }
  Frag string_any() { return seq({lit("\""), nfa_.star(string_char()), lit("\"")}); }

  // Free-form JSON: three rules (value, object, array) calling each other.
  int32_t any_value_rule() {
    if (any_value_ >= 0) return any_value_;
    any_value_ = new_rule();
    any_object_ = new_rule();
    any_array_ = new_rule();
    link(any_value_, nfa_.alt({string_any(), json_number_any(nfa_, true), lit("true"), lit("false"), lit("null"),
                               nfa_.call(any_object_), nfa_.call(any_array_)}));
    const Frag member = seq({string_any(), ws(), lit(":"), ws(), nfa_.call(any_value_), ws()});
    link(any_object_, seq({lit("{"), ws(), nfa_.optional(sep_plus(member, seq({lit(","), ws()}))), lit("}")}));
    const Frag item = seq({nfa_.call(any_value_), ws()});
    link(any_array_, seq({lit("["), ws(), nfa_.optional(sep_plus(item, seq({lit(","), ws()}))), lit("]")}));
    return any_value_;
  }

  Result<Frag> value(const json& s, const std::string& path, int depth) {
    if (nfa_.failed() || !nfa_.meter().step()) return nfa_.meter().failure();
    if (depth > kMaxSchemaDepth) return bad(path, "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels (move it to $defs)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) return bad(path, "the schema `false` accepts nothing");
      return nfa_.call(any_value_rule());
    }
    if (!s.is_object()) return bad(path, "a schema must be an object or a boolean");
    for (const auto& [key, v] : s.items()) {
      if (!known_keywords().count(key)) return bad(path + "/" + key, "keyword `" + key + "` is not supported");
    }
    if (const auto it = s.find("$ref"); it != s.end()) {
      PLIMSOLL_ASSIGN(const json* target, resolve(*it, path));
      return nfa_.call(rule_for(target, root_, path + "/$ref"));
    }
    if (const auto it = s.find("const"); it != s.end()) return lit(it->dump());
    if (const auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) return bad(path + "/enum", "`enum` must be a non-empty array");
      std::vector<Frag> options;
      for (const json& v : *it) options.push_back(lit(v.dump()));
      return nfa_.alt(options);
    }
    if (const auto it = s.find("allOf"); it != s.end()) return all_of(s, *it, path, depth);
    for (const char* key : {"anyOf", "oneOf"}) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      const std::string p = path + "/" + key;
      if (!it->is_array() || it->empty()) return bad(p, std::string("`") + key + "` must be a non-empty array");
      std::vector<Frag> options;
      for (size_t i = 0; i < it->size(); ++i) {
        PLIMSOLL_ASSIGN(Frag f, value((*it)[i], p + "/" + std::to_string(i), depth + 1));
        options.push_back(f);
      }
      return nfa_.alt(options);
    }
    std::vector<std::string> types;
    if (const auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) {
        types.push_back(it->get<std::string>());
      } else if (it->is_array() && !it->empty()) {
        for (const json& t : *it) {
          if (!t.is_string()) return bad(path + "/type", "`type` entries must be strings");
          types.push_back(t.get<std::string>());
        }
      } else {
        return bad(path + "/type", "`type` must be a string or a non-empty array of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items") || s.contains("prefixItems")) {
      types.push_back("array");
    } else if (s.contains("minLength") || s.contains("maxLength") || s.contains("pattern") || s.contains("format")) {
      types.push_back("string");
    } else if (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum") ||
               s.contains("multipleOf")) {
      types.push_back("number");
    } else {
      return nfa_.call(any_value_rule());
    }
    PLIMSOLL_ASSIGN(const bool nullable, flag(s, "nullable", path));
    if (nullable) types.push_back("null");
    std::vector<Frag> options;
    for (const std::string& t : types) {
      PLIMSOLL_ASSIGN(Frag f, typed(s, t, path, depth));
      options.push_back(f);
    }
    return options.size() == 1 ? options[0] : nfa_.alt(options);
  }

  // Local references: "#" and any JSON pointer into the root ("#/$defs/X",
  // "#/definitions/X", zod-to-json-schema's "#/properties/a/items"; RFC 6901's
  // ~0 ~1 and the fragment's %XX escapes decoded).
  Result<const json*> resolve(const json& ref, const std::string& path) {
    const std::string at = path + "/$ref";
    if (!ref.is_string()) return bad(at, "`$ref` must be a string");
    const std::string& r = ref.get_ref<const std::string&>();
    if (r == "#") return root_;
    if (r.rfind("#/", 0) != 0) return bad(at, "`$ref` \"" + r + "\": only local references (#, #/...) are supported");
    const json* node = root_;
    for (size_t begin = 2; node;) {
      const size_t end = std::min(r.find('/', begin), r.size());
      const std::string token = pointer_token(std::string_view(r).substr(begin, end - begin));
      if (node->is_object()) {
        const auto it = node->find(token);
        node = it == node->end() ? nullptr : &*it;
      } else if (node->is_array() && !token.empty() && token.size() < 10 &&
                 token.find_first_not_of("0123456789") == std::string::npos &&
                 std::stoul(token) < node->size()) {
        node = &(*node)[std::stoul(token)];
      } else {
        node = nullptr;
      }
      if (end == r.size()) break;
      begin = end + 1;
    }
    if (!node) return bad(at, "`$ref` \"" + r + "\" points to nothing in the schema");
    return node;
  }

  // One JSON pointer token of a URI fragment: %XX, then ~1 -> "/" and ~0 -> "~".
  static std::string pointer_token(std::string_view t) {
    std::string decoded;
    for (size_t i = 0; i < t.size(); ++i) {
      const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
      if (t[i] == '%' && i + 2 < t.size() && hex(t[i + 1]) && hex(t[i + 2])) {
        decoded += static_cast<char>(std::stoi(std::string(t.substr(i + 1, 2)), nullptr, 16));
        i += 2;
      } else {
        decoded += t[i];
      }
    }
    std::string out;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (decoded[i] == '~' && i + 1 < decoded.size() && (decoded[i + 1] == '0' || decoded[i + 1] == '1')) {
        out += decoded[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        out += decoded[i];
      }
    }
    return out;
  }

  // allOf: object schemas merged (properties, required; additionalProperties
  // false if any says so); the schema's own keywords join them.
  Result<Frag> all_of(const json& s, const json& list, const std::string& path, int depth) {
    const std::string p = path + "/allOf";
    if (!list.is_array() || list.empty()) return bad(p, "`allOf` must be a non-empty array");
    json merged = s;
    merged.erase("allOf");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string pi = p + "/" + std::to_string(i);
      const json* part = &list[i];
      for (int hops = 0; part->is_object() && part->contains("$ref"); ++hops) {
        if (hops > kMaxSchemaDepth) return bad(pi, "`$ref` chain too long");
        PLIMSOLL_ASSIGN(part, resolve(part->at("$ref"), pi));
      }
      if (list.size() == 1 && !merged.contains("type") && !merged.contains("properties")) return value(*part, pi, depth + 1);
      if (!part->is_object() || part->contains("allOf") || part->contains("anyOf") || part->contains("oneOf") ||
          (part->contains("type") && part->at("type") != "object")) {
        return bad(pi, "`allOf` is supported for object schemas only (merged)");
      }
      for (const auto& [key, v] : part->items()) {
        if (key == "properties") {
          for (const auto& [name, sub] : v.items()) merged["properties"][name] = sub;
        } else if (key == "required") {
          for (const json& r : v) merged["required"].push_back(r);
        } else if (key == "additionalProperties") {
          if (v.is_boolean() && !v.get<bool>()) merged["additionalProperties"] = false;
        } else if (key != "type" && !known_keywords().count(key)) {
          return bad(pi + "/" + key, "keyword `" + key + "` is not supported");
        }
      }
    }
    merged["type"] = "object";
    owned_.push_back(std::move(merged));
    return value(owned_.back(), path, depth + 1);
  }

  // A boolean keyword: false when absent; anything but a boolean is an error.
  static Result<bool> flag(const json& s, const char* key, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return false;
    if (!it->is_boolean()) return bad(path + "/" + key, std::string("`") + key + "` must be a boolean");
    return it->get<bool>();
  }

  Result<int64_t> count(const json& s, const char* key, int64_t fallback, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return fallback;
    const std::string p = path + "/" + key;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) return bad(p, std::string("`") + key + "` must be a non-negative integer");
    const int64_t v = it->get<int64_t>();
    if (v > limits_.max_repeat) return bad(p, std::string("`") + key + "` of " + std::to_string(v) + " is over the limit of " + std::to_string(limits_.max_repeat));
    return v;
  }

  Result<std::optional<NumberBound>> bound(const json& s, const char* key, const char* exclusive_key,
                                           const std::string& path) {
    std::optional<NumberBound> b;
    for (const char* k : {key, exclusive_key}) {
      const auto it = s.find(k);
      if (it == s.end() || it->is_boolean()) continue;
      if (!it->is_number()) return bad(path + "/" + k, std::string("`") + k + "` must be a number");
      NumberBound v;
      v.value = it->is_number_unsigned() ? static_cast<long double>(it->get<uint64_t>())
                : it->is_number_integer() ? static_cast<long double>(it->get<int64_t>())
                                          : static_cast<long double>(it->get<double>());
      v.exclusive = k == exclusive_key;
      const bool lower = std::string(key) == "minimum";
      if (!b || (lower ? v.value > b->value : v.value < b->value) || (v.value == b->value && v.exclusive)) b = v;
    }
    // Draft 4: exclusiveMinimum / exclusiveMaximum as a flag on the bound.
    if (const auto it = s.find(exclusive_key); it != s.end() && it->is_boolean() && it->get<bool>() && b) b->exclusive = true;
    return b;
  }

  // `multipleOf` as a positive int64 (1 when absent); a fraction (0.01) is refused.
  static Result<int64_t> multiple_of(const json& s, const std::string& path) {
    const auto it = s.find("multipleOf");
    if (it == s.end()) return int64_t{1};
    const std::string p = path + "/multipleOf";
    if (!it->is_number()) return bad(p, "`multipleOf` must be a number");
    constexpr double kInt64End = 9223372036854775808.0;  // 2^63
    if (it->is_number_unsigned()) {
      if (it->get<uint64_t>() >= static_cast<uint64_t>(kInt64End)) return bad(p, "`multipleOf` " + it->dump() + " is over int64");
    } else if (it->is_number_integer()) {
      if (it->get<int64_t>() <= 0) return bad(p, "`multipleOf` must be greater than 0");
    } else {
      const double v = it->get<double>();
      if (!(v > 0)) return bad(p, "`multipleOf` must be greater than 0");
      if (v != std::floor(v)) return bad(p, "`multipleOf` " + it->dump() + " is not an integer: only integer multiples are supported");
      if (v >= kInt64End) return bad(p, "`multipleOf` " + it->dump() + " is over int64");
      return static_cast<int64_t>(v);
    }
    const int64_t m = it->get<int64_t>();
    if (m <= 0) return bad(p, "`multipleOf` must be greater than 0");
    return m;
  }

  // The multiples of m in [lo, hi], a rule of their own, shared by every
  // schema with the same three numbers. Every automaton of the schema
  // together stays within max_multiple_of_states (each state becomes a DFA
  // state in the lazy budget when reached).
  Result<Frag> multiples(int64_t lo, int64_t hi, int64_t m, const std::string& path) {
    const auto key = std::make_tuple(lo, hi, m);
    if (const auto it = multiples_.find(key); it != multiples_.end()) return nfa_.call(it->second);
    // The greatest multiple <= hi (128 bits: no overflow at int64's ends).
    const __int128 top = static_cast<__int128>(hi) - ((static_cast<__int128>(hi) % m) + m) % m;
    if (top < lo) return bad(path + "/multipleOf", "no multiple of " + std::to_string(m) + " lies within `minimum`/`maximum`");
    const int64_t left = limits_.max_multiple_of_states - multiple_states_;
    Result<IntegerMultiples> f = json_integer_multiples(nfa_, lo, hi, m, left);
    if (!f.ok()) {
      if (nfa_.failed()) return f.error();
      // (some multiple lies within: the state limit)
      return bad(path + "/multipleOf", f.error().message + " (the limit: " + std::to_string(limits_.max_multiple_of_states) +
                                           " for every multipleOf of the schema together); narrow the bounds or use a smaller multipleOf");
    }
    multiple_states_ += f->states;
    const int32_t rule = new_rule();
    link(rule, f->frag);
    multiples_[key] = rule;
    return nfa_.call(rule);
  }

  Result<Frag> typed(const json& s, const std::string& t, const std::string& path, int depth) {
    if (t == "null") return lit("null");
    if (t == "boolean") return nfa_.alt({lit("true"), lit("false")});
    if (t == "integer" || t == "number") {
      PLIMSOLL_ASSIGN(const int64_t m, multiple_of(s, path));
      PLIMSOLL_ASSIGN(const auto lo, bound(s, "minimum", "exclusiveMinimum", path));
      PLIMSOLL_ASSIGN(const auto hi, bound(s, "maximum", "exclusiveMaximum", path));
      // A number with an (integer) multipleOf is written as an integer.
      if (t == "integer" || s.contains("multipleOf")) {
        const auto r = integer_bounds(lo, hi);
        if (!r) return bad(path, "no integer lies within `minimum`/`maximum`");
        if (m > 1) return multiples(r->first, r->second, m, path);
        return json_integer_range(nfa_, r->first, r->second);
      }
      if (!lo && !hi) return json_number_any(nfa_, true);
      const auto f = json_number_bounded(nfa_, lo, hi);
      if (!f) return bad(path, "no number lies within `minimum`/`maximum`");
      return *f;
    }
    if (t == "string") return string(s, path);
    if (t == "array" || t == "object") {
      // At the top of a rule, inline; deeper, its own rule (nested objects
      // inside anyOf cost a call, not a copy in a bigger rule).
      if (depth == 0) return t == "array" ? array(s, path) : object(s, path);
      const int32_t r = new_rule();
      Result<Frag> body = t == "array" ? array(s, path) : object(s, path);
      if (!body.ok()) return body.error();
      link(r, *body);
      return nfa_.call(r);
    }
    return bad(path + "/type", "unknown `type` \"" + t + "\"");
  }

  Result<Frag> string(const json& s, const std::string& path) {
    if (s.contains("format")) return format_string(s, path);
    if (s.contains("pattern")) return pattern_string(s, path);
    PLIMSOLL_ASSIGN(const int64_t min, count(s, "minLength", 0, path));
    PLIMSOLL_ASSIGN(const int64_t max, count(s, "maxLength", -1, path));
    if (max >= 0 && min > max) return bad(path + "/minLength", "`minLength` is over `maxLength`");
    if (max == 0) return lit("\"\"");
    if (min == 0 && max < 0) {
      // One shared rule: its masks are cached once for every such string.
      if (string_rule_ < 0) {
        string_rule_ = new_rule();
        link(string_rule_, string_any());
      }
      return nfa_.call(string_rule_);
    }
    // Characters as a counted rule (the count lives in the frame) ending with
    // the closing quote, shared by every string with these bounds.
    int32_t& r = counted_strings_[{min, max}];
    if (r == 0) {
      r = new_rule(std::max<int64_t>(min, 1), max);
      link(r, string_char());
      set_tail(r, lit("\""));
    }
    const Frag body = min == 0 ? nfa_.alt({lit("\""), nfa_.call(r)}) : nfa_.call(r);
    return seq({lit("\""), body});
  }

  Result<Frag> format_string(const json& s, const std::string& path) {
    const json& f = s.at("format");
    const std::string p = path + "/format";
    if (!f.is_string()) return bad(p, "`format` must be a string");
    if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength")) {
      return bad(p, "`format` together with `pattern`, `minLength` or `maxLength` is not supported");
    }
    const auto pattern = format_pattern(f.get<std::string>());
    if (!pattern) return bad(p, "format \"" + f.get<std::string>() + "\" is not supported");
    Result<JsonStringPattern> r = json_string_pattern(nfa_, *pattern);
    if (!r.ok()) return bad(p, r.error().message);
    const int32_t rule = new_rule();
    link(rule, seq({lit("\""), r->body, lit("\"")}));
    return nfa_.call(rule);
  }

  // A string whose text matches `pattern` somewhere (everywhere with ^...$).
  Result<Frag> pattern_string(const json& s, const std::string& path) {
    const json& p = s.at("pattern");
    if (!p.is_string()) return bad(path + "/pattern", "`pattern` must be a string");
    if (s.contains("minLength") || s.contains("maxLength")) {
      return bad(path + "/pattern", "`pattern` together with `minLength` or `maxLength` is not supported (put the length in the pattern)");
    }
    Result<JsonStringPattern> r = json_string_pattern(nfa_, p.get<std::string>());
    if (!r.ok()) return bad(path + "/pattern", r.error().message);
    Frag body = r->body;
    if (!r->anchored_start) body = nfa_.seq(nfa_.star(string_char()), body);
    if (!r->anchored_end) body = nfa_.seq(body, nfa_.star(string_char()));
    const int32_t rule = new_rule();
    link(rule, seq({lit("\""), body, lit("\"")}));
    return nfa_.call(rule);
  }

  Result<Frag> array(const json& s, const std::string& path) {
    PLIMSOLL_ASSIGN(const bool unique, flag(s, "uniqueItems", path));
    if (unique) return bad(path + "/uniqueItems", "`uniqueItems` is not supported");
    PLIMSOLL_ASSIGN(int64_t min, count(s, "minItems", 0, path));
    PLIMSOLL_ASSIGN(int64_t max, count(s, "maxItems", -1, path));
    if (max >= 0 && min > max) return bad(path + "/minItems", "`minItems` is over `maxItems`");
    Frag open = seq({lit("["), ws()});
    bool written = false;  // some item before (a comma comes next)
    if (const auto it = s.find("prefixItems"); it != s.end()) {
      // The tuple's items are all written (valid whenever maxItems allows them).
      if (!it->is_array()) return bad(path + "/prefixItems", "`prefixItems` must be an array");
      const auto n = static_cast<int64_t>(it->size());
      if (max >= 0 && n > max) return bad(path + "/prefixItems", "`prefixItems` longer than `maxItems`");
      for (size_t i = 0; i < it->size(); ++i) {
        const int32_t r = rule_for(&(*it)[i], root_, path + "/prefixItems/" + std::to_string(i));
        open = seq({open, written ? seq({lit(","), ws()}) : nfa_.empty(), nfa_.call(r), ws()});
        written = true;
      }
      min = std::max<int64_t>(0, min - n);
      max = max < 0 ? -1 : max - n;
    }
    const auto items = s.find("items");
    if ((items != s.end() && items->is_boolean() && !items->get<bool>()) || max == 0) {
      if (min > 0) return bad(path + "/minItems", "`minItems` needs more items than `items`/`maxItems` allow");
      return seq({open, lit("]")});
    }
    const int32_t item = items == s.end() ? any_value_rule() : rule_for(&*items, root_, path + "/items");
    // Items as a counted rule: the first without a comma, the later ones with one.
    const int32_t r = new_rule(std::max<int64_t>(min, 1), max);
    GrammarRule& rule = rules_[static_cast<size_t>(r)];
    rule.next = nfa_.add_state();
    const Frag first = seq({written ? seq({lit(","), ws()}) : nfa_.empty(), nfa_.call(item), ws()});
    const Frag next = seq({lit(","), ws(), nfa_.call(item), ws()});
    link(r, first);
    nfa_.add_epsilon(rules_[static_cast<size_t>(r)].next, next.start);
    nfa_.add_epsilon(next.end, rules_[static_cast<size_t>(r)].end);
    set_tail(r, lit("]"));
    const Frag body = min == 0 ? nfa_.alt({lit("]"), nfa_.call(r)}) : nfa_.call(r);
    return seq({open, body});
  }

  Result<Frag> object(const json& s, const std::string& path) {
    const auto props = s.find("properties");
    std::set<std::string> required;
    if (const auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) return bad(path + "/required", "`required` must be an array");
      for (const json& r : *it) {
        if (!r.is_string()) return bad(path + "/required", "`required` entries must be strings");
        if (props == s.end() || !props->contains(r.get<std::string>())) {
          return bad(path + "/required", "required property \"" + r.get<std::string>() + "\" is not in `properties`");
        }
        required.insert(r.get<std::string>());
      }
    }
    const auto extra = s.find("additionalProperties");
    if (props == s.end() || props->empty()) {
      if (extra == s.end() || (extra->is_boolean() && extra->get<bool>())) return nfa_.call(any_object_rule());
      if (extra->is_boolean()) return seq({lit("{"), ws(), lit("}")});
      const int32_t v = rule_for(&*extra, root_, path + "/additionalProperties");
      const Frag member = seq({string_any(), ws(), lit(":"), ws(), nfa_.call(v), ws()});
      return seq({lit("{"), ws(), nfa_.optional(sep_plus(member, seq({lit(","), ws()}))), lit("}")});
    }
    if (!props->is_object()) return bad(path + "/properties", "`properties` must be an object");
    // Two tracks: t0 = no member written yet, t1 = some member written (a
    // comma comes next). Each value is written once, as a rule both call.
    const Frag open = seq({lit("{"), ws()});
    int32_t t0 = open.end;
    int32_t t1 = -1;
    for (const auto& [key, sub] : props->items()) {
      const bool req = required.count(key) > 0;
      const int32_t v = rule_for(&sub, root_, path + "/properties/" + key);
      const int32_t n0 = req ? -1 : nfa_.add_state();
      const int32_t n1 = nfa_.add_state();
      auto member = [&]() { return seq({lit(json(key).dump()), ws(), lit(":"), ws(), nfa_.call(v), ws()}); };
      if (t0 >= 0) {
        const Frag m = member();
        nfa_.add_epsilon(t0, m.start);
        nfa_.add_epsilon(m.end, n1);
        if (!req) nfa_.add_epsilon(t0, n0);
      }
      if (t1 >= 0) {
        const Frag m2 = seq({lit(","), ws(), member()});
        nfa_.add_epsilon(t1, m2.start);
        nfa_.add_epsilon(m2.end, n1);
        if (!req) nfa_.add_epsilon(t1, n1);
      }
      t0 = n0;
      t1 = n1;
    }
    const Frag close = lit("}");
    if (t0 >= 0) nfa_.add_epsilon(t0, close.start);
    if (t1 >= 0) nfa_.add_epsilon(t1, close.start);
    return Frag{open.start, close.end};
  }

  Nfa& nfa_;
  std::vector<GrammarRule>& rules_;
  const GrammarLimits& limits_;
  const json* root_ = nullptr;
  std::map<const json*, int32_t> rule_of_;
  std::deque<Pending> pending_;
  std::deque<json> owned_;  // merged allOf schemas (stable addresses)
  int32_t any_value_ = -1, any_object_ = -1, any_array_ = -1, string_rule_ = -1;
  std::map<std::pair<int64_t, int64_t>, int32_t> counted_strings_;  // (minLength, maxLength) -> rule (never 0: the root)
  std::map<std::tuple<int64_t, int64_t, int64_t>, int32_t> multiples_;  // (lo, hi, multipleOf) -> rule
  int64_t multiple_states_ = 0;  // of every multiples_ automaton
};

Error source_too_big(int64_t bytes, const GrammarLimits& limits, const char* what) {
  return make_error(ErrorCode::kInvalidArgument, std::string(what) + std::to_string(bytes) +
                                                     " bytes as JSON, over the limit of " +
                                                     std::to_string(limits.max_source_bytes));
}

}  // namespace

Result<std::shared_ptr<const Grammar>> grammar_from_json_schema(const json& schema, const GrammarLimits& limits) {
  const int64_t text_bytes = static_cast<int64_t>(schema.dump().size());
  if (text_bytes > limits.max_source_bytes) return source_too_big(text_bytes, limits, "the schema is ");
  const WorkspaceLease lease;  // one of the preparations' compile workspaces
  PLIMSOLL_TRY(lease.status());
  CompileMeter meter(limits);
  Nfa nfa(limits, meter);
  std::vector<GrammarRule> rules(1);
  SchemaCompiler c(nfa, rules, limits);
  const Frag lead = c.ws();
  PLIMSOLL_ASSIGN(const Frag v, c.top(schema, schema, ""));
  const Frag root = nfa.seq(lead, v);
  rules[0] = GrammarRule{root.start, root.start, root.end, 1, 1};
  return compile_grammar(nfa, std::move(rules), 0, limits);
}

Result<std::shared_ptr<const Grammar>> grammar_from_sequences(
    const std::vector<std::vector<GrammarPiece>>& alternatives, const GrammarLimits& limits) {
  int64_t text_bytes = 0;
  for (const auto& pieces : alternatives) {
    for (const GrammarPiece& p : pieces) text_bytes += p.schema ? static_cast<int64_t>(p.schema->dump().size()) : 0;
  }
  if (text_bytes > limits.max_source_bytes) return source_too_big(text_bytes, limits, "the schemas are ");
  if (alternatives.empty()) return make_error(ErrorCode::kInvalidArgument, "no alternatives to choose from");
  const WorkspaceLease lease;  // one of the preparations' compile workspaces
  PLIMSOLL_TRY(lease.status());
  CompileMeter meter(limits);
  Nfa nfa(limits, meter);
  std::vector<GrammarRule> rules(1);
  SchemaCompiler c(nfa, rules, limits);
  std::vector<Frag> options;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    Frag seq = nfa.empty();
    for (const GrammarPiece& p : alternatives[i]) {
      if (!p.schema) {
        seq = nfa.seq(seq, nfa.literal(p.literal));
        continue;
      }
      Result<Frag> v = c.top(*p.schema, *p.schema, "");
      if (!v.ok()) {
        std::string message = "[";  // (appended: GCC 12's -Wrestrict misfires on "[" + to_string(i))
        message += std::to_string(i);
        message += "]: ";
        message += v.error().message;
        return make_error(v.error().code, std::move(message));
      }
      seq = nfa.seq(seq, *v);
    }
    options.push_back(seq);
  }
  const Frag root = nfa.alt(options);
  rules[0] = GrammarRule{root.start, root.start, root.end, 1, 1};
  return compile_grammar(nfa, std::move(rules), 0, limits);
}

Result<std::shared_ptr<const Grammar>> grammar_any_json_object(const GrammarLimits& limits) {
  static std::mutex mu;
  static std::shared_ptr<const Grammar> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (cached) return cached;
  // Compiled once per process (not per request), a few rules.
  CompileMeter meter(limits);
  Nfa nfa(limits, meter);
  std::vector<GrammarRule> rules(1);
  SchemaCompiler c(nfa, rules, limits);
  const Frag lead = c.ws();
  const Frag root = nfa.seq(lead, nfa.call(c.any_object_rule()));
  rules[0] = GrammarRule{root.start, root.start, root.end, 1, 1};
  PLIMSOLL_ASSIGN(std::shared_ptr<const Grammar> g, compile_grammar(nfa, std::move(rules), 0, limits));
  cached = g;
  return g;
}

}  // namespace plimsoll
