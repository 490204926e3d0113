// Hostile templates and inputs: integer arithmetic is checked (no UB, no
// SIGFPE), every render keeps to its step, output, held-bytes and call-depth
// budgets (checked before the allocation), a macro cannot outlive the scope
// it sees, and deep nesting anywhere is an error, not a stack overflow.
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "chat/chat_template.h"
#include "chat/jinja_eval.h"

namespace plimsoll {
namespace {

Result<std::string> render(const std::string& source, const OrderedJson& context = OrderedJson::object(),
                           const ChatRenderLimits& limits = {}) {
  Result<ChatTemplate> t = ChatTemplate::parse(source);
  if (!t.ok()) return t.error();
  return t->render_json(context, limits);
}

std::string rendered(const std::string& source, const OrderedJson& context = OrderedJson::object()) {
  Result<std::string> out = render(source, context);
  EXPECT_TRUE(out.ok()) << source << ": " << (out.ok() ? "" : out.error().message);
  return out.ok() ? *out : "<error>";
}

Error failure(const std::string& source, const OrderedJson& context = OrderedJson::object(),
              const ChatRenderLimits& limits = {}) {
  Result<std::string> out = render(source, context, limits);
  EXPECT_FALSE(out.ok()) << source << " rendered " << (out.ok() ? out->substr(0, 200) : "");
  return out.ok() ? Error{} : out.error();
}

bool has(const Error& e, const std::string& text) { return e.message.find(text) != std::string::npos; }

const OrderedJson kNoVariables = OrderedJson::object();
constexpr const char* kMin = "(-9223372036854775807 - 1)";

TEST(JinjaArithmetic, Int64MinModuloMinusOneIsZeroAsInPython) {
  // The reported crash: this was SIGFPE on x86 (idiv traps).
  EXPECT_EQ(rendered(std::string("{{ ") + kMin + " % -1 }}"), "0");
  EXPECT_EQ(rendered("{{ 7 % -1 }}|{{ -7 % -1 }}"), "0|0");
}

TEST(JinjaArithmetic, OverflowIsAnErrorNamingTheOperationAndOperands) {
  EXPECT_EQ(failure(std::string("{{ ") + kMin + " // -1 }}").message,
            "chat template 1:31: integer overflow in -9223372036854775808 // -1");
  EXPECT_EQ(failure("{{ 9223372036854775807 + 1 }}").message,
            "chat template 1:24: integer overflow in 9223372036854775807 + 1");
  EXPECT_TRUE(has(failure(std::string("{{ ") + kMin + " - 1 }}"), "integer overflow in -9223372036854775808 - 1"));
  EXPECT_TRUE(has(failure("{{ 3037000500 * 3037000500 }}"), "integer overflow in 3037000500 * 3037000500"));
  EXPECT_TRUE(has(failure("{{ 2 ** 63 }}"), "integer overflow in 2 ** 63"));
  EXPECT_TRUE(has(failure("{{ 3 ** 9223372036854775807 }}"), "integer overflow in 3 ** 9223372036854775807"));
  EXPECT_TRUE(has(failure(std::string("{{ -") + kMin + " }}"), "integer overflow in -(-9223372036854775808)"));
  const Error e = failure(std::string("{{ ") + kMin + " * -1 }}");
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
}

TEST(JinjaArithmetic, ExactResultsAtTheEdges) {
  EXPECT_EQ(rendered("{{ 2 ** 62 }}|{{ (-2) ** 63 }}|{{ 1 ** 9223372036854775807 }}|{{ (-1) ** 9223372036854775807 }}"),
            "4611686018427387904|-9223372036854775808|1|-1");
  EXPECT_EQ(rendered(std::string("{{ ") + kMin + " // 1 }}|{{ 9223372036854775807 // -1 }}"),
            "-9223372036854775808|-9223372036854775807");
  EXPECT_EQ(rendered("{{ 9007199254740993 == 9007199254740992 }}|{{ 9007199254740993 > 9007199254740992 }}"),
            "false|true");
}

TEST(JinjaArithmetic, FloorDivisionAndModuloFollowPython) {
  EXPECT_EQ(rendered("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 // -2 }} {{ -7 // -2 }}"), "3 -4 -4 3");
  EXPECT_EQ(rendered("{{ 7 % 3 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ -7 % -3 }}"), "1 2 -2 -1");
  EXPECT_EQ(rendered("{{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ 2 ** -1 }}"), "3.0 0.5 0.5");
}

TEST(JinjaArithmetic, DivisionAndModuloByZeroAreErrors) {
  EXPECT_EQ(failure("{{ 5 % 0 }}").message, "chat template 1:6: modulo by zero in 5 % 0");
  EXPECT_EQ(failure("{{ 5 / 0 }}").message, "chat template 1:6: division by zero in 5 / 0");
  EXPECT_TRUE(has(failure("{{ 5.0 // 0 }}"), "division by zero in 5.0 // 0"));
  EXPECT_TRUE(has(failure("{{ 5 % 0.0 }}"), "modulo by zero in 5 % 0.0"));
  EXPECT_TRUE(has(failure("{{ 0 ** -1 }}"), "by zero in 0 ** -1"));
}

TEST(JinjaArithmetic, FloatToIntOutsideInt64IsAnError) {
  EXPECT_EQ(rendered("{{ x | int }}|{{ -2.9 | int }}|{{ true | int }}", {{"x", 9.2e18}}), "9200000000000000000|-2|1");
  EXPECT_TRUE(has(failure("{{ x | int }}", {{"x", 9.3e18}}), "is outside the 64-bit integers"));
  EXPECT_TRUE(has(failure("{{ (x * x) | int }}", {{"x", 1e300}}), "int(inf) is outside the 64-bit integers"));
  EXPECT_TRUE(has(failure("{{ (x * x - x * x) | int }}", {{"x", 1e300}}), "int(nan)"));
}

TEST(JinjaArithmetic, RangeAndSlicesAtTheEdgesOfInt64) {
  EXPECT_EQ(rendered("{{ range(9223372036854775806, 9223372036854775807, 10) | list }}"), "[9223372036854775806]");
  EXPECT_EQ(rendered(std::string("{{ range(") + kMin + ", " + kMin + " + 3) | list }}"),
            "[-9223372036854775808, -9223372036854775807, -9223372036854775806]");
  EXPECT_EQ(rendered("{{ range(5, 0, -9223372036854775807) | list }}"), "[5]");
  EXPECT_EQ(rendered("{{ 'abc'[1::9223372036854775807] }}|{{ 'abc'[::" + std::string(kMin) + "] }}"), "b|c");
  EXPECT_EQ(rendered(std::string("{{ [1, 2, 3][") + kMin + ":] }}|{{ [1, 2, 3][:9223372036854775807] }}"),
            "[1, 2, 3]|[1, 2, 3]");
  EXPECT_EQ(rendered("{{ 'abcdef'[::-2] }}|{{ [1, 2, 3, 4][3:0:-2] }}"), "fdb|[4, 2]");
  // 2^64 - 1 items: refused by size before anything is built.
  const Error e = failure(std::string("{{ range(") + kMin + ", 9223372036854775807) | length }}");
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  EXPECT_TRUE(has(e, "range() of 18446744073709551615 items would build")) << e.message;
}

TEST(JinjaLiterals, HugeLiteralsAreErrors) {
  EXPECT_TRUE(has(failure("{{ 99999999999999999999 }}"), "integer literal out of range"));
  EXPECT_TRUE(has(failure("{{ " + std::string(400, '9') + ".5 }}"), "float literal out of range"));
  EXPECT_EQ(rendered("{{ 0.000000000000000000000000001 > 0 }}"), "true");
}

ChatRenderLimits limits(int64_t steps, int64_t output_bytes, int64_t held_bytes) {
  ChatRenderLimits l;
  l.max_steps = steps;
  l.max_output_bytes = output_bytes;
  l.max_held_bytes = held_bytes;
  return l;
}

TEST(JinjaBudget, AMessageRepeated10To8TimesIsRefusedBeforeItIsBuilt) {
  const OrderedJson context = {{"messages", {{{"role", "user"}, {"content", "ab"}}}}};
  Error e = failure("{{ messages[0].content * 100000000 }}", context);  // default budgets
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  EXPECT_EQ(e.message,
            "chat template 1:24: '*' (2 bytes x 100000000) would build 200000000 bytes with 0 held: over the "
            "render's held-bytes budget of 67108864 bytes");
  e = failure("{{ messages[0].content * 9223372036854775807 }}", context);
  EXPECT_TRUE(has(e, "would build 9223372036854775807 bytes")) << e.message;
  EXPECT_EQ(rendered("{{ 'ab' * 3 }}|{{ 'ab' * 0 }}|{{ 'ab' * -5 }}"), "ababab||");
}

TEST(JinjaBudget, OutputBudgetStopsALoopThatPrintsTooMuch) {
  const OrderedJson context = {{"messages", {{{"role", "user"}, {"content", "hello"}}}}};
  const std::string loop = "{% for i in range(1000) %}{% for j in range(1000) %}{{ messages[0].content }}"
                           "{% endfor %}{% endfor %}";
  const Error e = failure(loop, context, limits(100'000'000, 1 << 20, 64 << 20));
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  EXPECT_EQ(e.message, "chat template 1:53: the rendered text would pass the output budget of 1048576 bytes");
  Result<std::string> out = render("{% for i in range(3) %}{{ messages[0].content }}{% endfor %}", context,
                                   limits(1000, 15, 1 << 20));
  ASSERT_TRUE(out.ok()) << out.error().message;  // exactly the budget
  EXPECT_EQ(*out, "hellohellohello");
  EXPECT_TRUE(has(failure("{% for i in range(4) %}{{ messages[0].content }}{% endfor %}", context,
                          limits(1000, 15, 1 << 20)),
                  "output budget of 15 bytes"));
}

TEST(JinjaBudget, StepBudgetStopsLongLoops) {
  const Error e = failure("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", kNoVariables,
                          limits(100'000, 1 << 20, 1 << 20));
  EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(has(e, "the render passed its step budget of 100000 steps")) << e.message;
  // A loop that reads a long string costs its bytes in steps too.
  const OrderedJson context = {{"s", std::string(1 << 20, 'a')}};
  EXPECT_TRUE(has(failure("{% for i in range(1000) %}{% if s == s %}{% endif %}{% endfor %}", context,
                          limits(100'000, 1 << 20, 1 << 20)),
                  "step budget of 100000"));
}

TEST(JinjaBudget, HeldBytesBoundGrowthThroughNamespacesAndLists) {
  const ChatRenderLimits small = limits(10'000'000, 1 << 20, 1 << 20);
  // Doubling a string: refused at the first size over the budget.
  Error e = failure("{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                    kNoVariables, small);
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  EXPECT_TRUE(has(e, "'~' would build")) << e.message;
  EXPECT_TRUE(has(e, "held-bytes budget of 1048576 bytes")) << e.message;
  // Doubling a list.
  e = failure("{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}", kNoVariables,
              small);
  EXPECT_TRUE(has(e, "'+' of two lists would build")) << e.message;
  // Many distinct strings kept alive in a list: each is counted while held.
  e = failure(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + ['x' * 1000 ~ i] %}"
      "{% endfor %}",
      kNoVariables, small);
  EXPECT_EQ(e.code, ErrorCode::kOutOfMemory);
  // Rebuilding a string many times is fine: what is freed is no longer held.
  Result<std::string> out = render(
      "{% set ns = namespace(s='') %}{% for i in range(200) %}{% set ns.s = ('y' * 500000)[:i] %}{% endfor %}"
      "{{ ns.s | length }}",
      kNoVariables, small);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "199");
}

TEST(JinjaBudget, BuiltinsCheckTheirSizeBeforeBuilding) {
  const ChatRenderLimits small = limits(10'000'000, 1 << 20, 64 << 10);
  EXPECT_TRUE(has(failure("{{ ('a' * 10000) | replace('a', 'bbbbbbbbbb') }}", kNoVariables, small), "replace would build 100000"));
  EXPECT_TRUE(has(failure("{{ (' a' * 20000).split() | length }}", kNoVariables, small), "split would build"));
  EXPECT_TRUE(has(failure("{% for c in 'x' * 20000 %}{% endfor %}", kNoVariables, small), "looping over a string would build"));
  OrderedJson big = OrderedJson::object();
  for (int i = 0; i < 5000; ++i) big["key" + std::to_string(i)] = i;
  const OrderedJson context = {{"d", big}, {"l", OrderedJson(std::vector<int>(40000, 1))}};
  EXPECT_TRUE(has(failure("{{ d | items | length }}", context, small), "items would build"));
  EXPECT_TRUE(has(failure("{{ d.keys() | length }}", context, small), "keys would build"));
  EXPECT_TRUE(has(failure("{% for k in d %}{% endfor %}", context, small), "looping over a dict would build"));
  EXPECT_TRUE(has(failure("{{ l | tojson }}", context, small), "tojson would build"));
  EXPECT_TRUE(has(failure("{{ l | join(',') }}", context, small), "join would build"));
  EXPECT_TRUE(has(failure("{{ l | reverse | length }}", context, small), "reverse would build"));
  EXPECT_TRUE(has(failure("{{ l | string }}", context, small), "string would build"));
  EXPECT_TRUE(has(failure("{{ [l] | tojson(9223372036854775807) }}", context, small), "tojson would build"));
  EXPECT_TRUE(has(failure("{{ l[::1] | length }}", context, small), "a slice would build"));
  // The same calls within the budget.
  EXPECT_EQ(rendered("{{ [[1]] | tojson(2) }}"), "[\n  [\n    1\n  ]\n]");
  EXPECT_EQ(rendered("{{ 'a-b-a' | replace('a', 'xy') }}|{{ 'a-b-a'.replace('a', '', 1) }}"), "xy-b-xy|-b-a");
  EXPECT_EQ(rendered("{{ ' a  b '.split() | join(',') }}|{{ 'a,b,'.split(',') | tojson }}"), "a,b|[\"a\", \"b\", \"\"]");
}

TEST(JinjaBudget, RaiseExceptionKeepsAtMost4KiBOfItsMessage) {
  const Error e = failure("{{ raise_exception('x' * 100000) }}");
  EXPECT_EQ(e.message, "chat template raised: " + std::string(4096, 'x'));
}

TEST(JinjaScopes, AMacroKeptAfterItsLoopEndedIsAnErrorNotAUseAfterFree) {
  // The macro sees `i` in the loop body's scope; that scope is gone after the
  // loop. Before the fix this read a dead stack frame (ASan with
  // detect_stack_use_after_return=1: stack-use-after-return in Scope::lookup).
  const std::string escaped =
      "{% set ns = namespace(m=none) %}{% for i in ['a', 'b'] %}{% macro m() %}[{{ i }}]{% endmacro %}"
      "{% set ns.m = m %}{{ m() }}{% endfor %}{{ ns.m() }}";
  const Error e = failure(escaped);
  EXPECT_EQ(e.message, "chat template 1:61: macro 'm' was called after the block it was defined in had ended");
  // Kept from one iteration and called in the next: the earlier scope is gone too.
  const std::string next =
      "{% set ns = namespace(m=none) %}{% for i in ['a', 'b'] %}{% if ns.m %}{{ ns.m() }}{% endif %}"
      "{% macro m() %}[{{ i }}]{% endmacro %}{% set ns.m = m %}{% endfor %}";
  EXPECT_TRUE(has(failure(next), "macro 'm' was called after the block it was defined in had ended"));
  // A macro defined in a macro call, kept after the call returned.
  const std::string inner =
      "{% set ns = namespace(f=none) %}{% macro outer(x) %}{% macro inner() %}{{ x }}{% endmacro %}"
      "{% set ns.f = inner %}{% endmacro %}{{ outer(1) }}{{ ns.f() }}";
  EXPECT_TRUE(has(failure(inner), "macro 'inner' was called after the block it was defined in had ended"));
}

TEST(JinjaScopes, MacrosWorkWhileTheirScopeLives) {
  EXPECT_EQ(rendered("{% for i in [1, 2] %}{% macro m() %}<{{ i }}>{% endmacro %}{{ m() }}{% endfor %}"), "<1><2>");
  EXPECT_EQ(rendered("{% macro outer(x) %}{% macro inner() %}({{ x }}){% endmacro %}{{ inner() }}{{ inner() }}"
                     "{% endmacro %}{{ outer(7) }}"),
            "(7)(7)");
  EXPECT_EQ(rendered("{% macro m(x) %}{{ x }}!{% endmacro %}{% set ns = namespace(f=none) %}{% set ns.f = m %}"
                     "{% for i in [1, 2] %}{{ ns.f(i) }}{% endfor %}"),
            "1!2!");
  EXPECT_EQ(rendered("{% set ns = namespace(l=none) %}{% for x in [5, 6] %}{% set ns.l = loop %}{% endfor %}"
                     "{{ ns.l.index }}/{{ ns.l.length }}/{{ ns.l.previtem }}"),
            "2/2/5");
}

TEST(JinjaScopes, ANamespaceCannotHoldANamespace) {
  // Otherwise a value could contain itself (printing it would never end) or
  // nest without bound through later changes.
  EXPECT_TRUE(has(failure("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}"),
                  "set ns.self: a namespace attribute cannot hold a namespace"));
  EXPECT_TRUE(has(failure("{% set ns = namespace() %}{% set ns.l = [1, {'a': ns}] %}"),
                  "a namespace attribute cannot hold a namespace"));
  EXPECT_EQ(rendered("{% set a = namespace(x=1) %}{% set b = namespace(inner=a) %}{% set a.x = 2 %}{{ b.inner.x }}"),
            "2");
}

TEST(JinjaNesting, DeepValuesAreErrors) {
  const Error e = failure(
      "{% set ns = namespace(v=[]) %}{% for i in range(100000) %}{% set ns.v = [ns.v] %}{% endfor %}"
      "{{ ns.v | tojson }}");
  EXPECT_TRUE(has(e, "nests deeper than")) << e.message;
  // A deep variable from the caller (e.g. a tools schema).
  OrderedJson deep = OrderedJson::array();
  for (int i = 0; i < 300; ++i) deep = OrderedJson::array({deep});
  EXPECT_TRUE(has(failure("{{ x | tojson }}", {{"x", deep}}), "a variable nests deeper than 128"));
  OrderedJson ok = 1;
  for (int i = 0; i < 100; ++i) ok = OrderedJson::array({ok});
  EXPECT_EQ(rendered("{{ x | tojson }}", {{"x", ok}}), std::string(100, '[') + "1" + std::string(100, ']'));
}

TEST(JinjaNesting, LongChainsInTheSourceAreErrorsNotStackOverflows) {
  const auto parse_code = [](const std::string& source) {
    Result<ChatTemplate> t = ChatTemplate::parse(source);
    EXPECT_FALSE(t.ok()) << source.substr(0, 80);
    return t.ok() ? ErrorCode::kInternal : t.error().code;
  };
  std::string sum = "{{ 1", members = "{{ a", filters = "{{ x", calls = "{{ f", indexes = "{{ l", tests = "{{ x";
  for (int i = 0; i < 100000; ++i) {
    sum += " + 1";
    members += ".b";
    filters += " | trim";
    calls += "()";
    indexes += "[0]";
  }
  for (int i = 0; i < 1000; ++i) tests += " is defined";
  for (std::string* s : {&sum, &members, &filters, &calls, &indexes, &tests}) {
    *s += " }}";
    EXPECT_EQ(parse_code(*s), ErrorCode::kUnsupported);
  }
  std::string elifs = "{% if false %}";
  for (int i = 0; i < 100000; ++i) elifs += "{% elif false %}";
  EXPECT_EQ(parse_code(elifs + "{% endif %}"), ErrorCode::kUnsupported);
  // Long but flat is fine.
  std::string flat = "{{ [1";
  for (int i = 0; i < 100000; ++i) flat += ", 1";
  EXPECT_EQ(rendered(flat + "] | length }}"), "100001");
}

// The deepest render the limits allow (each macro call made from inside an
// expression at the parser's nesting bound, until evaluation reaches
// kMaxEvalNesting) fits in a thread with a small stack, so no server thread
// can overflow its stack.
void* render_deepest(void* result) {
  std::string nested = "f(n - 1)";
  for (int i = 0; i < 190; ++i) nested = "(" + nested + " ~ '')";
  const std::string source =
      "{% macro f(n) %}{% if n > 0 %}{{ " + nested + " }}{% endif %}{% endmacro %}{{ f(60) }}";
  *static_cast<Result<std::string>*>(result) = render(source);
  return nullptr;
}

TEST(JinjaNesting, TheDeepestRenderFitsASmallStack) {
#if defined(__SANITIZE_ADDRESS__)
  constexpr size_t kStackBytes = size_t{32} << 20;  // ASan frames are several times larger
#else
  constexpr size_t kStackBytes = size_t{2} << 20;
#endif
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, kStackBytes), 0);
  Result<std::string> result = std::string();
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, &attr, render_deepest, &result), 0);
  ASSERT_EQ(pthread_join(thread, nullptr), 0);
  pthread_attr_destroy(&attr);
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(has(result.error(), "evaluation nests deeper than " + std::to_string(jinja::kMaxEvalNesting)))
      << result.error().message;
}

}  // namespace
}  // namespace plimsoll
