// The grammar compile's bounds, against the heap it really uses: every
// hostile input of issue 37 ends in an error naming a limit, never a crash,
// and the bytes this thread holds at the peak of a compile stay within
// GrammarLimits::max_compile_bytes (counted by the binary's operator new,
// heap_counter.h).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "core/work_control.h"
#include "heap_counter.h"
#include "engine/grammar/grammar_lazy.h"
#include "engine/grammar/grammar_sources.h"

namespace plimsoll {
namespace {

using nlohmann::json;

// Bytes of the heap this thread held at the peak of `fn`, above what it held before.
template <typename Fn>
int64_t peak_during(Fn fn) {
  const int64_t before = heap_counter::live_bytes();
  heap_counter::reset_peak();
  fn();
  return heap_counter::peak_bytes() - before;
}

// Error strings, the result object and allocator rounding outside the meter.
constexpr int64_t kSlackBytes = 64 * 1024;

std::string repeated(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

// d0 .. d{levels-1}, each an anyOf of `fan` $refs to the next: fan^levels expansions.
json ref_fan_out(int levels, int fan) {
  json defs = json::object();
  for (int d = 0; d < levels; ++d) {
    json any = json::array();
    for (int k = 0; k < fan; ++k) {
      std::string ref = "#/$defs/d";
      ref += std::to_string(d + 1);
      any.push_back(d + 1 < levels ? json{{"$ref", ref}} : json{{"type", "string"}});
    }
    std::string name = "d";
    name += std::to_string(d);
    defs[name] = {{"anyOf", any}};
  }
  return {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
}

TEST(GrammarBounds, StackedQuantifiersAreRefusedNotRecursed) {
  std::string pattern(60001, '*');  // "a" then 60,000 quantifiers
  pattern[0] = 'a';
  auto g = grammar_from_regex(pattern, GrammarLimits{});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("multiple repeat"), std::string::npos) << g.error().message;
  for (const char* p : {"a**", "a{2}{3}", "a+*", "a??*", "(?:a*)*"}) {
    auto r = grammar_from_regex(p, GrammarLimits{});
    if (std::string(p) == "(?:a*)*") {
      EXPECT_TRUE(r.ok()) << p;  // a group may be repeated
    } else {
      EXPECT_FALSE(r.ok()) << p;
    }
  }
  const json schema = {{"type", "string"}, {"pattern", pattern}};
  auto s = grammar_from_json_schema(schema, GrammarLimits{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("multiple repeat"), std::string::npos) << s.error().message;
}

TEST(GrammarBounds, DeepGroupsStopAtTheNestingLimit) {
  const std::string deep = repeated("(", 30000) + "a" + repeated(")", 30000);
  auto g = grammar_from_regex(deep, GrammarLimits{});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("nested deeper"), std::string::npos) << g.error().message;
  const std::string deep_q = repeated("(?:", 20000) + "a" + repeated(")*", 20000);
  EXPECT_FALSE(grammar_from_regex(deep_q, GrammarLimits{}).ok());
}

TEST(GrammarBounds, BadEscapesAreErrorsNamingThem) {
  for (const char* p : {"\\xzz", "\\x", "\\x1", "[\\xg0]"}) {
    auto g = grammar_from_regex(p, GrammarLimits{});
    ASSERT_FALSE(g.ok()) << p;
    EXPECT_EQ(g.error().code, ErrorCode::kInvalidArgument);
    EXPECT_NE(g.error().message.find("\\x"), std::string::npos) << g.error().message;
  }
  auto ok = grammar_from_regex("\\x41+", GrammarLimits{});
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE((*ok)->matches("AA"));
}

TEST(GrammarBounds, MistypedBooleanKeywordsAreErrorsNotExceptions) {
  for (const char* key : {"nullable", "uniqueItems"}) {
    const json schema = {{"type", "array"}, {"items", {{"type", "integer"}}}, {key, 4}};
    auto g = grammar_from_json_schema(schema, GrammarLimits{});
    ASSERT_FALSE(g.ok()) << key;
    EXPECT_NE(g.error().message.find(std::string("`") + key + "` must be a boolean"), std::string::npos)
        << g.error().message;
  }
}

TEST(GrammarBounds, HostileCompilesStayWithinTheirBytes) {
  GrammarLimits limits;
  limits.max_compile_bytes = int64_t{4} << 20;
  struct Case {
    const char* name;
    std::function<Result<std::shared_ptr<const Grammar>>()> compile;
  };
  const json fan = ref_fan_out(16, 8);
  const json long_strings = {{"type", "array"},
                             {"items", {{"type", "string"}, {"maxLength", 256}}},
                             {"maxItems", 256}};
  const std::string big_regex = repeated("[a-z0-9]", 8000);
  const json prime_multiple = json::parse(
      R"({"type":"integer","multipleOf":999999937,"minimum":-9007199254740991,"maximum":9007199254740991})");
  // 16 different multiples near the state limit together (refused past it).
  json many_multiples = {{"type", "object"}, {"properties", json::object()}};
  for (int m = 101; m < 101 + 2 * 16; m += 2) {
    std::string name = "p";  // (appended: GCC 12's -Wrestrict misfires on "p" + to_string(m))
    name += std::to_string(m);
    many_multiples["properties"][name] = {{"type", "integer"}, {"multipleOf", m}};
  }
  const Case cases[] = {
      {"(?:(?:a?){1000}){25}", [&] { return grammar_from_regex("(?:(?:a?){1000}){25}", limits); }},
      {"$ref fan-out 8^16", [&] { return grammar_from_json_schema(fan, limits); }},
      {"256 strings of 256", [&] { return grammar_from_json_schema(long_strings, limits); }},
      {"8000 classes in a row", [&] { return grammar_from_regex(big_regex, limits); }},
      {"(a|b|c){1000}x", [&] { return grammar_from_regex("(?:a|b|c){1000}x", limits); }},
      {"multipleOf 999999937 over +-(2^53 - 1)", [&] { return grammar_from_json_schema(prime_multiple, limits); }},
      {"16 multipleOf of ~1,500 states", [&] { return grammar_from_json_schema(many_multiples, limits); }},
  };
  for (const Case& c : cases) {
    bool failed = false;
    std::string message;
    const int64_t peak = peak_during([&] {
      auto g = c.compile();
      failed = !g.ok();
      if (failed) message = g.error().message;
    });
    EXPECT_LE(peak, limits.max_compile_bytes + kSlackBytes) << c.name << ": " << message;
    if (failed) {
      EXPECT_NE(message.find("limit"), std::string::npos) << c.name << ": " << message;
    }
  }
}

TEST(GrammarBounds, TheRefFanOutIsRulesNotCopies) {
  // 8^16 expansions once; now one rule per definition, entered by calls.
  const auto t0 = std::chrono::steady_clock::now();
  auto g = grammar_from_json_schema(ref_fan_out(16, 8), GrammarLimits{});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_LE((*g)->num_rules(), 40);
  EXPECT_LT((*g)->num_nfa_states(), 20000);
  EXPECT_LT(seconds, 5.0);
  EXPECT_TRUE((*g)->matches(R"("x")"));
  EXPECT_FALSE((*g)->matches("1"));
  // Its rules run lazily within the grammar's fixed budget.
  const auto lock = (*g)->lazy().lock();
  EXPECT_LE((*g)->lazy().used_bytes(), (*g)->limits().max_lazy_bytes);
}

TEST(GrammarBounds, StepBudgetStopsACompile) {
  GrammarLimits few;
  few.max_compile_steps = 10000;
  auto g = grammar_from_regex("[a-z]{500}", few);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("10000 steps"), std::string::npos) << g.error().message;
}

TEST(GrammarBounds, CancelAndDeadlineStopACompile) {
  WorkControl cancelled(WorkControl::Clock::now() + std::chrono::hours(1), "1 h");
  cancelled.cancel();
  {
    WorkControlScope scope(&cancelled);
    auto g = grammar_from_json_schema(ref_fan_out(16, 8), GrammarLimits{});
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().code, ErrorCode::kCancelled) << g.error().message;
  }
  WorkControl late(WorkControl::Clock::now() - std::chrono::seconds(1), "10 s (--prep-timeout-ms)");
  {
    WorkControlScope scope(&late);
    auto g = grammar_from_json_schema(ref_fan_out(16, 8), GrammarLimits{});
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.error().message.find("--prep-timeout-ms"), std::string::npos) << g.error().message;
  }
  EXPECT_EQ(current_work_control(), nullptr);
  EXPECT_TRUE(grammar_from_regex("[a-z]{3}", GrammarLimits{}).ok());  // no control: nothing stops it
}

}  // namespace
}  // namespace plimsoll
