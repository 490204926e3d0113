// A render's budgets: steps, the output's bytes, the bytes it holds at once,
// and macro call depth. Every check runs before the work or allocation it
// guards; exceeding one is an error naming the budget and its value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "chat/jinja_lexer.h"
#include "chat/jinja_value.h"
#include "core/result.h"
#include "core/work_control.h"

namespace plimsoll::jinja {

struct RenderLimits {
  // Expressions and statements evaluated and loop iterations, plus one per
  // KiB that an operator or builtin reads or builds.
  int64_t max_steps = 2'000'000;
  int64_t max_output_bytes = int64_t{16} << 20;  // the rendered text
  // What a render holds at once: its output, the text of block sets and
  // macro calls being written, and every string, list and dict it built.
  int64_t max_held_bytes = int64_t{64} << 20;
  int max_call_depth = 64;  // macro calls nested in macro calls
};

class Budget {
 public:
  explicit Budget(const RenderLimits& limits) : limits_(limits) {}
  Budget(const Budget&) = delete;
  Budget& operator=(const Budget&) = delete;

  const RenderLimits& limits() const { return limits_; }
  ByteMeter* meter() { return &meter_; }
  int64_t steps() const { return steps_; }

  // One step (a node, an iteration), plus one per KiB of `bytes` read or built.
  Status step(SourcePos pos, int64_t bytes = 0);
  // Before building `bytes` (`what`: "'*'", "join", ...): the held budget must
  // have room for them; costs their steps.
  Status reserve(int64_t bytes, SourcePos pos, std::string_view what);
  // Bytes the held budget has left (0 when spent).
  int64_t room_bytes() const;
  Error held_error(int64_t bytes, SourcePos pos, std::string_view what) const;

  Status enter_call(SourcePos pos);
  void leave_call() { --call_depth_; }

 private:
  RenderLimits limits_;
  WorkPoll poll_;
  ByteMeter meter_;
  int64_t steps_ = 0;
  int call_depth_ = 0;
};

// Text being written (the output, a block set's or a macro call's text):
// counted as held while written; the output also keeps to max_output_bytes.
class TextSink {
 public:
  // is_output: the render's output (max_output_bytes applies).
  TextSink(Budget& budget, bool is_output) : budget_(budget), is_output_(is_output) {}
  ~TextSink();
  TextSink(const TextSink&) = delete;
  TextSink& operator=(const TextSink&) = delete;

  Status append(std::string_view text, SourcePos pos);
  Status append_value(const Value& value, SourcePos pos);  // as {{ }} prints it
  // The text; no longer counted here (a Value made of it counts it again).
  std::string take();

 private:
  int64_t room_bytes() const;
  Error full_error(int64_t bytes, SourcePos pos) const;
  void recount();

  Budget& budget_;
  bool is_output_;
  std::string text_;
  int64_t counted_bytes_ = 0;
};

}  // namespace plimsoll::jinja
