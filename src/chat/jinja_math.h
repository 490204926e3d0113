// Python's integer arithmetic on int64, checked: overflow and division or
// modulo by zero are errors naming the operation and its operands, never UB.
#pragma once

#include <cstdint>
#include <string_view>

#include "chat/jinja_lexer.h"
#include "core/result.h"

namespace plimsoll::jinja {

// x op y for op in + - * // % ** (y >= 0 for **); // and % floor as Python
// does (the remainder takes the divisor's sign), so INT64_MIN % -1 is 0.
Result<int64_t> checked_int_op(std::string_view op, int64_t x, int64_t y, SourcePos pos);
Result<int64_t> checked_negate(int64_t x, SourcePos pos);
// int(f): truncates toward zero; NaN, infinities and floats outside int64 are errors.
Result<int64_t> checked_float_to_int(double f, SourcePos pos);

}  // namespace plimsoll::jinja
