// Jinja evaluator: walks a parsed template with a variable context and writes
// the output; every failure is an Error naming the position.
#pragma once

#include <string>

#include "chat/jinja_ast.h"
#include "core/result.h"

namespace plimsoll::jinja {

// Renders `body` with `context`'s members as variables (over the builtin globals).
Result<std::string> render(const Body& body, const Object& context);

}  // namespace plimsoll::jinja
