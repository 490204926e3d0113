#include "engine/stop.h"

#include <gtest/gtest.h>

namespace plimsoll {
namespace {

TEST(StopMatcher, MatchesAcrossPieces) {
  StopMatcher m({"the end", "!!"});
  EXPECT_FALSE(m.push("and that was th"));
  EXPECT_FALSE(m.push("e e"));
  EXPECT_TRUE(m.push("nd. More"));
  EXPECT_EQ(m.match_begin(), std::string("and that was ").size());
  EXPECT_EQ(m.text(), "and that was the end. More");
}

TEST(StopMatcher, EarliestStopWinsAndNoStopsNeverMatch) {
  StopMatcher m({"b", "ab"});
  EXPECT_TRUE(m.push("xxab"));
  EXPECT_EQ(m.match_begin(), 2u);
  StopMatcher none({});
  EXPECT_FALSE(none.push("anything"));
}

}  // namespace
}  // namespace plimsoll
