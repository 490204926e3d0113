// JSON schema -> NFA (see grammar_sources.h for the subset).
#include <algorithm>
#include <mutex>
#include <optional>
#include <set>

#include "core/work_control.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll {
namespace {

using nlohmann::json;
using Frag = Nfa::Frag;

constexpr int kMaxSchemaDepth = 32;     // nested subschemas, $ref expansions included
constexpr int64_t kMaxRepeat = 256;     // maxItems / maxLength copies
constexpr int64_t kMaxIndent = 12;
constexpr int64_t kMaxIntegerDigits = 15;
constexpr int64_t kMaxFractionDigits = 15;
constexpr int64_t kMaxExponentDigits = 2;

Error bad(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument, "schema at " + (path.empty() ? std::string("/") : path) + ": " + what);
}

// Keywords that only annotate, or that our output satisfies anyway.
const std::set<std::string>& ignored_keywords() {
  static const std::set<std::string> k = {"title", "description", "default", "examples", "$schema", "$id",
                                          "$comment", "format", "deprecated", "readOnly", "writeOnly", "strict",
                                          "$defs", "definitions", "required", "additionalProperties", "properties",
                                          "type", "items", "minItems", "maxItems", "enum", "const", "anyOf",
                                          "oneOf", "allOf", "$ref", "minLength", "maxLength", "nullable",
                                          "minimum", "exclusiveMinimum", "uniqueItems", "name", "pattern"};
  return k;
}

class SchemaCompiler {
 public:
  SchemaCompiler(Nfa& nfa, const json& root, const GrammarLimits& limits) : nfa_(nfa), root_(root), limits_(limits) {}

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
  // Up to `n` digits (nested optionals: n states, not 2^n).
  Frag digits_upto(int64_t n) {
    Frag tail = nfa_.empty();
    for (int64_t k = 0; k < n; ++k) tail = nfa_.optional(nfa_.seq(nfa_.byte_range('0', '9'), tail));
    return tail;
  }
  Frag digits(int64_t max) { return seq({nfa_.byte_range('0', '9'), digits_upto(max - 1)}); }
  // Numbers stay within what every parser reads as a finite double: at most
  // kMaxIntegerDigits before the point, kMaxFractionDigits after it and
  // kMaxExponentDigits in the exponent (1e114 at most).
  Frag integer(bool minus, bool zero) {
    const Frag positive = seq({nfa_.byte_range('1', '9'), digits_upto(kMaxIntegerDigits - 1)});
    Frag body = zero ? nfa_.alt({lit("0"), positive}) : positive;
    return minus ? seq({nfa_.optional(lit("-")), body}) : body;
  }
  Frag number(bool minus) {
    const Frag frac = nfa_.optional(seq({lit("."), digits(kMaxFractionDigits)}));
    const Frag exp = nfa_.optional(seq({nfa_.alt({lit("e"), lit("E")}), nfa_.optional(nfa_.alt({lit("+"), lit("-")})),
                                        digits(kMaxExponentDigits)}));
    return seq({integer(minus, true), frac, exp});
  }

  // Free-form JSON, `depth` more levels of objects/arrays allowed.
  Frag any_value(int64_t depth) {
    std::vector<Frag> options = {string_any(), number(true), lit("true"), lit("false"), lit("null")};
    if (depth > 0) {
      options.push_back(any_object(depth - 1));
      options.push_back(any_array(depth - 1));
    }
    return nfa_.alt(options);
  }
  Frag any_object(int64_t depth) { return map_of([&] { return any_value(depth); }); }
  Frag any_array(int64_t depth) {
    const Frag item = seq({any_value(depth), ws()});
    return seq({lit("["), ws(), nfa_.optional(sep_plus(item, seq({lit(","), ws()}))), lit("]")});
  }
  template <typename ValueFn>
  Frag map_of(ValueFn value) {
    const Frag member = seq({string_any(), ws(), lit(":"), ws(), value(), ws()});
    return seq({lit("{"), ws(), nfa_.optional(sep_plus(member, seq({lit(","), ws()}))), lit("}")});
  }

  Result<Frag> value(const json& s, const std::string& path, int depth) {
    // A limit reached deeper down ends the walk here (a $ref fan-out would
    // otherwise go on expanding after the NFA stopped growing).
    if (nfa_.failed() || !nfa_.meter().step()) return nfa_.meter().failure();
    if (depth > kMaxSchemaDepth) return bad(path, "nested deeper than " + std::to_string(kMaxSchemaDepth) + " levels (recursive $ref is not supported)");
    if (s.is_boolean()) {
      if (!s.get<bool>()) return bad(path, "the schema `false` accepts nothing");
      return any_value(limits_.any_json_depth);
    }
    if (!s.is_object()) return bad(path, "a schema must be an object or a boolean");
    for (const auto& [key, v] : s.items()) {
      if (!ignored_keywords().count(key)) return bad(path, "keyword `" + key + "` is not supported");
    }
    if (const auto it = s.find("$ref"); it != s.end()) {
      PLIMSOLL_ASSIGN(const json* target, resolve(*it, path));
      return value(*target, path + "/$ref", depth + 1);
    }
    if (const auto it = s.find("const"); it != s.end()) return lit(it->dump());
    if (const auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) return bad(path, "`enum` must be a non-empty array");
      std::vector<Frag> options;
      for (const json& v : *it) options.push_back(lit(v.dump()));
      return nfa_.alt(options);
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      const auto it = s.find(key);
      if (it == s.end()) continue;
      if (!it->is_array() || it->empty()) return bad(path, std::string("`") + key + "` must be a non-empty array");
      if (std::string(key) == "allOf" && it->size() != 1) return bad(path, "`allOf` with more than one schema is not supported");
      std::vector<Frag> options;
      for (size_t i = 0; i < it->size(); ++i) {
        PLIMSOLL_ASSIGN(Frag f, value((*it)[i], path + "/" + key + "/" + std::to_string(i), depth + 1));
        options.push_back(f);
      }
      return nfa_.alt(options);
    }
    std::vector<std::string> types;
    if (const auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) {
        types.push_back(it->get<std::string>());
      } else if (it->is_array()) {
        for (const json& t : *it) {
          if (!t.is_string()) return bad(path, "`type` entries must be strings");
          types.push_back(t.get<std::string>());
        }
      } else {
        return bad(path, "`type` must be a string or an array of strings");
      }
    } else if (s.contains("properties") || s.contains("additionalProperties")) {
      types.push_back("object");
    } else if (s.contains("items")) {
      types.push_back("array");
    } else {
      return any_value(limits_.any_json_depth);
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

 private:
  Result<const json*> resolve(const json& ref, const std::string& path) {
    if (!ref.is_string()) return bad(path, "`$ref` must be a string");
    const std::string r = ref.get<std::string>();
    if (r == "#") return &root_;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p(prefix);
      if (r.rfind(p, 0) != 0) continue;
      const std::string section = p.substr(2, p.size() - 3);
      const std::string name = r.substr(p.size());
      const auto sec = root_.find(section);
      if (sec != root_.end() && sec->is_object()) {
        const auto it = sec->find(name);
        if (it != sec->end()) return &*it;
      }
      return bad(path, "`$ref` \"" + r + "\" names no definition");
    }
    return bad(path, "`$ref` \"" + r + "\": only local #/$defs/... and #/definitions/... references are supported");
  }

  // A boolean keyword: false when absent; anything but a boolean is an error.
  static Result<bool> flag(const json& s, const char* key, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return false;
    if (!it->is_boolean()) return bad(path, std::string("`") + key + "` must be a boolean");
    return it->get<bool>();
  }

  Result<int64_t> count(const json& s, const char* key, int64_t fallback, const std::string& path) {
    const auto it = s.find(key);
    if (it == s.end()) return fallback;
    if (!it->is_number_integer() || it->get<int64_t>() < 0) return bad(path, std::string("`") + key + "` must be a non-negative integer");
    const int64_t v = it->get<int64_t>();
    if (v > kMaxRepeat) return bad(path, std::string("`") + key + "` of " + std::to_string(v) + " is over the limit of " + std::to_string(kMaxRepeat));
    return v;
  }

  // `piece(k)` for k = 0 .. max-1 (max < 0: unbounded), at least `min` of them.
  template <typename PieceFn>
  Frag repeat(int64_t min, int64_t max, PieceFn piece) {
    Frag out = nfa_.empty();
    for (int64_t k = 0; k < min; ++k) out = nfa_.seq(out, piece(k));
    if (max < 0) {
      if (min == 0) return nfa_.optional(sep_like(piece));
      return nfa_.seq(out, nfa_.star(piece(min)));
    }
    Frag tail = nfa_.empty();
    for (int64_t k = max - 1; k >= min; --k) tail = nfa_.optional(nfa_.seq(piece(k), tail));
    return nfa_.seq(out, tail);
  }
  // piece(0) piece(1)*: the first piece differs (no separator), the rest loop.
  template <typename PieceFn>
  Frag sep_like(PieceFn piece) {
    const Frag first = piece(0);
    return nfa_.seq(first, nfa_.star(piece(1)));
  }

  Result<Frag> typed(const json& s, const std::string& t, const std::string& path, int depth) {
    if (t == "null") return lit("null");
    if (t == "boolean") return nfa_.alt({lit("true"), lit("false")});
    if (t == "integer" || t == "number") {
      bool minus = true;
      bool zero = true;
      if (const auto it = s.find("minimum"); it != s.end()) {
        if (!it->is_number() || it->get<double>() != 0.0) return bad(path, "`minimum` other than 0 is not supported");
        minus = false;
      }
      if (const auto it = s.find("exclusiveMinimum"); it != s.end()) {
        if (!it->is_number() || it->get<double>() != 0.0 || t != "integer") {
          return bad(path, "`exclusiveMinimum` other than 0 on an integer is not supported");
        }
        minus = false;
        zero = false;
      }
      return t == "integer" ? integer(minus, zero) : number(minus);
    }
    if (t == "string" && s.contains("pattern")) return pattern_string(s, path);
    if (t == "string") {
      PLIMSOLL_ASSIGN(const int64_t min, count(s, "minLength", 0, path));
      PLIMSOLL_ASSIGN(const int64_t max, count(s, "maxLength", -1, path));
      if (max >= 0 && min > max) return bad(path, "`minLength` is over `maxLength`");
      const Frag body = repeat(min, max, [&](int64_t) { return string_char(); });
      return seq({lit("\""), body, lit("\"")});
    }
    if (t == "array") return array(s, path, depth);
    if (t == "object") return object(s, path, depth);
    return bad(path, "unknown `type` \"" + t + "\"");
  }

  // A string whose text matches `pattern` somewhere (everywhere with ^...$).
  Result<Frag> pattern_string(const json& s, const std::string& path) {
    const json& p = s.at("pattern");
    if (!p.is_string()) return bad(path, "`pattern` must be a string");
    if (s.contains("minLength") || s.contains("maxLength")) {
      return bad(path, "`pattern` together with `minLength` or `maxLength` is not supported (put the length in the pattern)");
    }
    Result<JsonStringPattern> r = json_string_pattern(nfa_, p.get<std::string>());
    if (!r.ok()) return bad(path + "/pattern", r.error().message);
    Frag body = r->body;
    if (!r->anchored_start) body = nfa_.seq(nfa_.star(string_char()), body);
    if (!r->anchored_end) body = nfa_.seq(body, nfa_.star(string_char()));
    return seq({lit("\""), body, lit("\"")});
  }

  Result<Frag> array(const json& s, const std::string& path, int depth) {
    PLIMSOLL_ASSIGN(const bool unique, flag(s, "uniqueItems", path));
    if (unique) return bad(path, "`uniqueItems` is not supported");
    PLIMSOLL_ASSIGN(const int64_t min, count(s, "minItems", 0, path));
    PLIMSOLL_ASSIGN(const int64_t max, count(s, "maxItems", -1, path));
    if (max >= 0 && min > max) return bad(path, "`minItems` is over `maxItems`");
    const json* items = nullptr;
    if (const auto it = s.find("items"); it != s.end()) items = &*it;
    std::optional<Error> failed;
    auto item = [&]() -> Frag {
      if (!items) return seq({any_value(limits_.any_json_depth - 1), ws()});
      Result<Frag> f = value(*items, path + "/items", depth + 1);
      if (!f.ok()) {
        failed = f.error();
        return nfa_.empty();
      }
      return seq({*f, ws()});
    };
    auto piece = [&](int64_t k) { return k == 0 ? item() : seq({lit(","), ws(), item()}); };
    const Frag body = repeat(min, max, piece);
    if (failed) return *failed;
    return seq({lit("["), ws(), body, lit("]")});
  }

  Result<Frag> object(const json& s, const std::string& path, int depth) {
    const auto props = s.find("properties");
    std::set<std::string> required;
    if (const auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) return bad(path, "`required` must be an array");
      for (const json& r : *it) {
        if (!r.is_string()) return bad(path, "`required` entries must be strings");
        if (props == s.end() || !props->contains(r.get<std::string>())) {
          return bad(path, "required property \"" + r.get<std::string>() + "\" is not in `properties`");
        }
        required.insert(r.get<std::string>());
      }
    }
    const auto extra = s.find("additionalProperties");
    if (props == s.end() || props->empty()) {
      if (extra == s.end() || (extra->is_boolean() && extra->get<bool>())) return any_object(limits_.any_json_depth - 1);
      if (extra->is_boolean()) return seq({lit("{"), ws(), lit("}")});
      std::optional<Error> failed;
      const Frag f = map_of([&]() -> Frag {
        Result<Frag> v = value(*extra, path + "/additionalProperties", depth + 1);
        if (!v.ok()) {
          failed = v.error();
          return nfa_.empty();
        }
        return *v;
      });
      if (failed) return *failed;
      return f;
    }
    if (!props->is_object()) return bad(path, "`properties` must be an object");
    // Two tracks: t0 = no member written yet, t1 = some member written (a comma comes next).
    const Frag open = seq({lit("{"), ws()});
    int32_t t0 = open.end;
    int32_t t1 = -1;
    for (const auto& [key, sub] : props->items()) {
      const bool req = required.count(key) > 0;
      const std::string sub_path = path + "/properties/" + key;
      const int32_t n0 = req ? -1 : nfa_.add_state();
      const int32_t n1 = nfa_.add_state();
      auto member = [&]() -> Result<Frag> {
        PLIMSOLL_ASSIGN(Frag v, value(sub, sub_path, depth + 1));
        return seq({lit(json(key).dump()), ws(), lit(":"), ws(), v, ws()});
      };
      if (t0 >= 0) {
        PLIMSOLL_ASSIGN(Frag m, member());
        nfa_.add_epsilon(t0, m.start);
        nfa_.add_epsilon(m.end, n1);
        if (!req) nfa_.add_epsilon(t0, n0);
      }
      if (t1 >= 0) {
        PLIMSOLL_ASSIGN(Frag m, member());
        const Frag m2 = seq({lit(","), ws(), m});
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
  const json& root_;
  const GrammarLimits& limits_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> grammar_from_json_schema(const json& schema, const GrammarLimits& limits) {
  const int64_t text_bytes = static_cast<int64_t>(schema.dump().size());
  if (text_bytes > limits.max_source_bytes) {
    return make_error(ErrorCode::kInvalidArgument, "the schema is " + std::to_string(text_bytes) +
                                                       " bytes as JSON, over the limit of " +
                                                       std::to_string(limits.max_source_bytes));
  }
  const WorkspaceLease lease;  // one of the preparations' compile workspaces
  PLIMSOLL_TRY(lease.status());
  CompileMeter meter(limits);
  Nfa nfa(limits, meter);
  SchemaCompiler c(nfa, schema, limits);
  const Frag lead = c.ws();
  PLIMSOLL_ASSIGN(const Frag v, c.value(schema, "", 0));
  return compile_grammar(nfa, nfa.seq(lead, v), limits);
}

Result<std::shared_ptr<const Grammar>> grammar_from_sequences(
    const std::vector<std::vector<GrammarPiece>>& alternatives, const GrammarLimits& limits) {
  int64_t text_bytes = 0;
  for (const auto& pieces : alternatives) {
    for (const GrammarPiece& p : pieces) text_bytes += p.schema ? static_cast<int64_t>(p.schema->dump().size()) : 0;
  }
  if (text_bytes > limits.max_source_bytes) {
    return make_error(ErrorCode::kInvalidArgument, "the schemas are " + std::to_string(text_bytes) +
                                                       " bytes as JSON, over the limit of " +
                                                       std::to_string(limits.max_source_bytes));
  }
  if (alternatives.empty()) return make_error(ErrorCode::kInvalidArgument, "no alternatives to choose from");
  const WorkspaceLease lease;  // one of the preparations' compile workspaces
  PLIMSOLL_TRY(lease.status());
  CompileMeter meter(limits);
  Nfa nfa(limits, meter);
  std::vector<Frag> options;
  for (size_t i = 0; i < alternatives.size(); ++i) {
    Frag seq = nfa.empty();
    for (const GrammarPiece& p : alternatives[i]) {
      if (!p.schema) {
        seq = nfa.seq(seq, nfa.literal(p.literal));
        continue;
      }
      SchemaCompiler c(nfa, *p.schema, limits);
      Result<Frag> v = c.value(*p.schema, "", 0);
      if (!v.ok()) {
        std::string message = "[";  // (appended: GCC 12's -Wrestrict misfires on "[" + to_string(i))
        message += std::to_string(i);
        message += "]: ";
        message += v.error().message;
        return make_error(ErrorCode::kInvalidArgument, std::move(message));
      }
      seq = nfa.seq(seq, *v);
    }
    options.push_back(seq);
  }
  return compile_grammar(nfa, nfa.alt(options), limits);
}

Result<std::shared_ptr<const Grammar>> grammar_any_json_object(const GrammarLimits& limits) {
  static std::mutex mu;
  static std::shared_ptr<const Grammar> cached;
  static int64_t cached_depth = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (cached && cached_depth == limits.any_json_depth) return cached;
  // Compiled once per process (not per request): its own wider limits.
  GrammarLimits wide = limits;
  wide.max_dfa_states = std::max<int64_t>(limits.max_dfa_states, 65536);
  wide.max_compile_bytes = std::max<int64_t>(limits.max_compile_bytes, int64_t{256} << 20);
  wide.max_compile_steps = std::max<int64_t>(limits.max_compile_steps, int64_t{2'000'000'000});
  CompileMeter meter(wide);
  Nfa nfa(wide, meter);
  SchemaCompiler c(nfa, json::object(), wide);
  const Frag lead = c.ws();
  const Frag v = c.any_object(wide.any_json_depth - 1);
  PLIMSOLL_ASSIGN(std::shared_ptr<const Grammar> g, compile_grammar(nfa, nfa.seq(lead, v), wide));
  cached = g;
  cached_depth = limits.any_json_depth;
  return g;
}

}  // namespace plimsoll
