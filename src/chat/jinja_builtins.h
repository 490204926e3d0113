// Jinja builtins: filters, tests, methods on strings and dicts, and the global
// functions chat templates call (range, namespace, raise_exception, strftime_now, dict).
#pragma once

#include <string>

#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"
#include "core/result.h"

namespace plimsoll::jinja {

// Errors name the builtin and `pos`; unknown names are kUnsupported.
Result<Value> apply_filter(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos);
Result<bool> apply_test(const std::string& name, const Value& operand, CallArgs& args, SourcePos pos);
// obj.name as an attribute: a bound method (str.strip, dict.items, ...) or undefined.
Value bound_method(const Value& object, const std::string& name, SourcePos pos);
// The globals every render starts from.
Object make_globals();

// kInvalidArgument "chat template <pos>: <problem>".
Error eval_error(SourcePos pos, const std::string& problem);
Error unsupported_error(SourcePos pos, const std::string& what);

}  // namespace plimsoll::jinja
