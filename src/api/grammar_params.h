// Structured output fields: OpenAI's response_format (json_object,
// json_schema) and TGI's grammar (json, regex), compiled into the grammar the
// sampler masks with (engine/grammar/). 422s name the field and the limit.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_reader.h"
#include "engine/grammar/grammar_cache.h"

namespace plimsoll::api {

// Where a reader's object sits in the request body: the body's text and the
// keys from the top to the object. A schema is read again from the text in
// the client's key order (properties are written in it; the request tree
// sorts keys). No text (tests): the tree's sorted order.
struct BodyPath {
  std::string_view text;
  std::vector<std::string> keys;
  BodyPath child(std::string key) const {
    BodyPath p = *this;
    p.keys.push_back(std::move(key));
    return p;
  }
};

// response_format: no grammar for {"type": "text"} or when absent. `at`: f's
// object in the body. `cache`: the server's grammars (a schema or pattern
// sent before is not compiled again; null: compiled privately, as in tests).
Result<GrammarHandle> read_response_format(const FieldReader& f, const GrammarLimits& limits, const BodyPath& at = {},
                                           GrammarCache* cache = nullptr);
// TGI's grammar: no grammar when absent. `at`: f's object in the body; `cache` as above.
Result<GrammarHandle> read_tgi_grammar(const FieldReader& f, const GrammarLimits& limits, const BodyPath& at = {},
                                       GrammarCache* cache = nullptr);

}  // namespace plimsoll::api
