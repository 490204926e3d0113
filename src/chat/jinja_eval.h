// Jinja evaluator: walks a parsed template with a variable context and writes
// the output within the render's budgets; every failure is an Error naming
// the position (and, for a budget, the budget and its value).
#pragma once

#include <string>

#include "chat/jinja_ast.h"
#include "chat/jinja_budget.h"
#include "core/result.h"

namespace plimsoll::jinja {

// How deep evaluation may recurse (expressions, statements and macro calls
// together), so that a render's stack stays small on any thread.
constexpr int kMaxEvalNesting = 768;

// Renders `body` with `context`'s members as variables (over the builtin globals).
Result<std::string> render(const Body& body, const Object& context, const RenderLimits& limits = {});

}  // namespace plimsoll::jinja
