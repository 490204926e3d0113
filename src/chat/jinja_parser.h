// Jinja parser: tokens -> statement tree; errors as values naming the construct
// and its line:column (kUnsupported for tags we do not implement).
#pragma once

#include <vector>

#include "chat/jinja_ast.h"
#include "core/result.h"

namespace plimsoll::jinja {

Result<Body> parse(const std::vector<Token>& tokens);

}  // namespace plimsoll::jinja
