// Structured output fields: OpenAI's response_format (json_object,
// json_schema) and TGI's grammar (json, regex), compiled into the grammar the
// sampler masks with (engine/grammar/). 422s name the field and the limit.
#pragma once

#include <memory>

#include "api/field_reader.h"
#include "engine/grammar/grammar.h"

namespace plimsoll::api {

// response_format: nullptr for {"type": "text"} or when absent.
Result<std::shared_ptr<const Grammar>> read_response_format(const FieldReader& f, const GrammarLimits& limits);
// TGI's grammar: nullptr when absent.
Result<std::shared_ptr<const Grammar>> read_tgi_grammar(const FieldReader& f, const GrammarLimits& limits);

}  // namespace plimsoll::api
