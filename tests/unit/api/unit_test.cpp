// Unit tests of the API's pieces without HTTP: field reading, token spans,
// the default chat template, lossy JSON.
#include <gtest/gtest.h>

#include "api/chat_prompt.h"
#include "api/field_reader.h"
#include "api/json_text.h"

namespace plimsoll::api {
namespace {

TEST(FieldReader, NullAndAbsentAreUnset) {
  json j = {{"a", nullptr}};
  FieldReader f(j);
  auto a = f.integer("a");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  auto b = f.strings("b", true);
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());
}

TEST(FieldReader, IntegersRejectFractionsAndHugeValues) {
  json j = {{"x", 1.5}, {"y", 18446744073709551615ULL}, {"z", 7}};
  FieldReader f(j);
  EXPECT_FALSE(f.integer("x").ok());
  EXPECT_FALSE(f.integer("y").ok());
  EXPECT_TRUE(f.unsigned_integer("y").ok());
  EXPECT_EQ(**f.integer("z"), 7);
  EXPECT_EQ(**f.number("z"), 7.0);
}

TEST(JsonText, InvalidUtf8IsReplacedNotThrown) {
  json j = {{"t", std::string("a\xC3")}};
  EXPECT_EQ(dump_json(j), "{\"t\":\"a\xEF\xBF\xBD\"}");
  EXPECT_EQ(logprob_json(-INFINITY), nullptr);
}

TEST(ChatTemplate, DefaultFallback) {
  auto r = default_chat_template({{"system", "s"}, {"user", "u"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "system: s\nuser: u\nassistant:");
}

}  // namespace
}  // namespace plimsoll::api
