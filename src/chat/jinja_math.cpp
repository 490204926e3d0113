// Checked int64 arithmetic with Python's floor division and modulo.
#include "chat/jinja_math.h"

#include <cmath>
#include <string>

namespace plimsoll::jinja {
namespace {

Error math_error(SourcePos pos, std::string_view problem, std::string_view op, int64_t x, int64_t y) {
  return make_error(ErrorCode::kInvalidArgument, "chat template " + pos.text() + ": " + std::string(problem) +
                                                     " in " + std::to_string(x) + " " + std::string(op) + " " +
                                                     std::to_string(y));
}

// Python: q = floor(x / y), r = x - q * y (r has y's sign). y != 0, not MIN // -1.
void floor_divmod(int64_t x, int64_t y, int64_t* q, int64_t* r) {
  *q = x / y;
  *r = x % y;
  if (*r != 0 && ((*r < 0) != (y < 0))) {
    *q -= 1;
    *r += y;
  }
}

Result<int64_t> checked_pow(int64_t x, int64_t y, SourcePos pos) {
  int64_t result = 1, base = x;
  for (int64_t e = y; e > 0; e >>= 1) {
    if ((e & 1) != 0 && __builtin_mul_overflow(result, base, &result)) {
      return math_error(pos, "integer overflow", "**", x, y);
    }
    // Squaring past int64 while bits remain means the result passes it too.
    if (e > 1 && __builtin_mul_overflow(base, base, &base)) return math_error(pos, "integer overflow", "**", x, y);
  }
  return result;
}

}  // namespace

Result<int64_t> checked_int_op(std::string_view op, int64_t x, int64_t y, SourcePos pos) {
  int64_t out = 0;
  if (op == "+" || op == "-" || op == "*") {
    const bool overflow = op == "+"   ? __builtin_add_overflow(x, y, &out)
                          : op == "-" ? __builtin_sub_overflow(x, y, &out)
                                      : __builtin_mul_overflow(x, y, &out);
    if (overflow) return math_error(pos, "integer overflow", op, x, y);
    return out;
  }
  if (op == "//" || op == "%") {
    if (y == 0) return math_error(pos, op == "%" ? "modulo by zero" : "division by zero", op, x, y);
    if (y == -1) {  // x % -1 is 0; x // -1 is -x, which overflows for INT64_MIN
      if (op == "%") return int64_t{0};
      if (x == INT64_MIN) return math_error(pos, "integer overflow", op, x, y);
      return -x;
    }
    int64_t q = 0, r = 0;
    floor_divmod(x, y, &q, &r);
    return op == "//" ? q : r;
  }
  if (op == "**") {
    if (y < 0) return math_error(pos, "a negative exponent has no integer result", op, x, y);
    return checked_pow(x, y, pos);
  }
  return make_error(ErrorCode::kInternal, "chat template " + pos.text() + ": no integer operator '" +
                                              std::string(op) + "'");
}

Result<int64_t> checked_negate(int64_t x, SourcePos pos) {
  if (x == INT64_MIN) {
    return make_error(ErrorCode::kInvalidArgument,
                      "chat template " + pos.text() + ": integer overflow in -(" + std::to_string(x) + ")");
  }
  return -x;
}

Result<int64_t> checked_float_to_int(double f, SourcePos pos) {
  // [-2^63, 2^63) are exactly the doubles whose truncation fits int64.
  if (!std::isfinite(f) || f < -9223372036854775808.0 || f >= 9223372036854775808.0) {
    std::string text = std::isnan(f) ? "nan" : std::isinf(f) ? (f > 0 ? "inf" : "-inf") : std::to_string(f);
    return make_error(ErrorCode::kInvalidArgument,
                      "chat template " + pos.text() + ": int(" + text + ") is outside the 64-bit integers");
  }
  return static_cast<int64_t>(f);
}

}  // namespace plimsoll::jinja
