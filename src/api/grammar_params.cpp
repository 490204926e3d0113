// response_format and grammar -> Grammar (grammar_params.h).
#include "api/grammar_params.h"

#include <fmt/format.h>

#include "api/request_json.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll::api {
namespace {

using OrderedJson = nlohmann::ordered_json;

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

// The grammar's own error, prefixed with the field it came from; its code is
// kept (a compile that found the request memory full is a 429, not a 400).
Result<GrammarHandle> in_field(Result<GrammarHandle> g, const std::string& field) {
  if (!g.ok()) return g.error().with_context("`" + field + "`");
  return g;
}

Result<GrammarHandle> typed_grammar(const json& grammar, const std::string& field, const GrammarLimits& limits,
                                    const BodyPath& at, GrammarCache* cache);

// The free-form JSON object grammar, through the cache like any other.
Result<GrammarHandle> any_object_grammar(const GrammarLimits& limits, GrammarCache* cache) {
  return cached_grammar(cache, grammar_cache_key("json_object", "", limits),
                        [&] { return grammar_any_json_object(limits); });
}

// `schema` (a member of the request tree, at `at` in the body) in the
// client's key order. Its JSON text is bounded before the member is read again.
Result<OrderedJson> schema_in_order(const json& schema, const BodyPath& at, const GrammarLimits& limits,
                                    const std::string& field) {
  const int64_t bytes = static_cast<int64_t>(schema.dump().size());
  if (bytes > limits.max_source_bytes) {
    return invalid(fmt::format("`{}`: the schema is {} bytes as JSON, over the limit of {}", field, bytes,
                               limits.max_source_bytes));
  }
  OrderedJson ordered = at.text.empty() ? OrderedJson() : member_in_order(at.text, at.keys);
  if (ordered.is_null() && !schema.is_null()) ordered = OrderedJson(schema);  // no body text: sorted
  return ordered;
}

// Keyed by the schema's JSON text in the client's key order (properties are written in it).
Result<GrammarHandle> schema_grammar(const json& schema, const BodyPath& at, const GrammarLimits& limits,
                                     const std::string& field, GrammarCache* cache) {
  PLIMSOLL_ASSIGN(const OrderedJson ordered, schema_in_order(schema, at, limits, field));
  return in_field(cached_grammar(cache, grammar_cache_key("json_schema", ordered.dump(), limits),
                                 [&] { return grammar_from_json_schema(ordered, limits); }),
                  field);
}

}  // namespace

Result<GrammarHandle> read_response_format(const FieldReader& f, const GrammarLimits& limits, const BodyPath& at,
                                           GrammarCache* cache) {
  const json* format = f.raw("response_format");
  if (!format) return GrammarHandle{};
  if (!format->is_object()) {
    return invalid(std::string("`response_format` must be an object, got ") + json_type_name(*format));
  }
  const FieldReader r(*format);
  // TGI's forms: {"type": "json" | "json_object" | "json_schema" | "regex", "value": ...}.
  if (const json* kind = r.raw("type"); kind && (*kind == "json" || *kind == "regex" || r.raw("value"))) {
    return typed_grammar(*format, "response_format", limits, at.child("response_format"), cache);
  }
  PLIMSOLL_ASSIGN(auto type, r.string("type"));
  if (!type) return invalid("`response_format.type` is required (\"text\", \"json_object\" or \"json_schema\")");
  if (*type == "text") return GrammarHandle{};
  if (*type == "json_object") return in_field(any_object_grammar(limits, cache), "response_format");
  if (*type != "json_schema") {
    return invalid("`response_format.type` must be \"text\", \"json_object\", \"json_schema\" (or TGI's \"json\" or "
                   "\"regex\" with `value`). Given: \"" + type->substr(0, 64) + "\"");
  }
  const json* spec = r.raw("json_schema");
  if (!spec || !spec->is_object()) {
    return invalid("`response_format.json_schema` must be an object with `name` and `schema` for type \"json_schema\"");
  }
  const json* schema = FieldReader(*spec).raw("schema");
  if (!schema) return in_field(any_object_grammar(limits, cache), "response_format.json_schema");  // OpenAI: schema is optional
  return schema_grammar(*schema, at.child("response_format").child("json_schema").child("schema"), limits,
                        "response_format.json_schema.schema", cache);
}

namespace {

// TGI's GrammarType ({"type", "value"}), the request's `field` (`grammar`,
// or `response_format` on TGI's chat route): "json" (alias "json_object")
// with a schema (or its JSON text), "regex" with a pattern, "json_schema"
// with {"name", "schema"}.
[[gnu::noinline]] Result<GrammarHandle> typed_grammar(const json& grammar, const std::string& field,
                                                      const GrammarLimits& limits, const BodyPath& at,
                                                      GrammarCache* cache) {
  const FieldReader r(grammar);
  PLIMSOLL_ASSIGN(auto type, r.string("type"));
  const json* value = r.raw("value");
  if (!type || !value) return invalid("`" + field + "` needs `type` (\"json\" or \"regex\") and `value`");
  if (*type == "regex") {
    if (!value->is_string()) return invalid("`" + field + ".value` must be a string for type \"regex\", got " + json_type_name(*value));
    const std::string& pattern = value->get_ref<const std::string&>();
    if (static_cast<int64_t>(pattern.size()) > limits.max_source_bytes) {  // (bounded before it is copied into a key)
      return in_field(grammar_from_regex(pattern, limits).error(), field + ".value");
    }
    return in_field(cached_grammar(cache, grammar_cache_key("regex", pattern, limits),
                                   [&] { return grammar_from_regex(pattern, limits); }),
                    field + ".value");
  }
  if (*type == "json" || *type == "json_object" || *type == "json_schema") {
    if (value->is_string()) {  // a schema sent as JSON text
      const std::string& text = value->get_ref<const std::string&>();
      if (static_cast<int64_t>(text.size()) > limits.max_source_bytes) {
        return invalid(fmt::format("`{}.value` is {} bytes, over the limit of {}", field, text.size(),
                                   limits.max_source_bytes));
      }
      // Bounded as a body is (nesting, tree bytes): the text is the client's.
      Result<json> tree = parse_request_json(text);
      if (!tree) return invalid("`" + field + ".value` is a string that is not a JSON schema: " + tree.error().message);
      const bool wrapped = *type == "json_schema" && tree->is_object() && tree->contains("schema");
      const BodyPath in_text{text, wrapped ? std::vector<std::string>{"schema"} : std::vector<std::string>{}};
      return schema_grammar(wrapped ? (*tree)["schema"] : *tree, in_text, limits, field + ".value", cache);
    }
    const bool wrapped = *type == "json_schema" && value->is_object() && value->contains("schema");
    const BodyPath in_body = wrapped ? at.child("value").child("schema") : at.child("value");
    return schema_grammar(wrapped ? (*value)["schema"] : *value, in_body, limits, field + ".value", cache);
  }
  return invalid("`" + field + ".type` must be \"json\" or \"regex\". Given: \"" + type->substr(0, 64) + "\"");
}

}  // namespace

Result<GrammarHandle> read_tgi_grammar(const FieldReader& f, const GrammarLimits& limits, const BodyPath& at,
                                       GrammarCache* cache) {
  const json* grammar = f.raw("grammar");
  if (!grammar) return GrammarHandle{};
  if (!grammar->is_object()) return invalid(std::string("`grammar` must be an object, got ") + json_type_name(*grammar));
  return typed_grammar(*grammar, "grammar", limits, at.child("grammar"), cache);
}

}  // namespace plimsoll::api
