// Peak RSS of a run that writes every block of the KV pool stays within the
// printed memory plan (VmHWM from /proc/self/status, checked by the binary).
#include <gtest/gtest.h>

#include "run_command.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

// Under AddressSanitizer the process holds ~230 MiB (shadow memory, the
// allocator's caches; the release build 48 MiB) when it plans (`plimsoll bench
// --memory-limit 512Mi` prints it as "runtime", 2026-12-07): the plan counts it,
// so the limit must leave room for it.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* kFillLimit = "384Mi";
#else
constexpr const char* kFillLimit = "64Mi";
#endif

TEST(Bench, FillingTheWholeKvPoolStaysWithinThePlan) {
  for (const char* limit : {kFillLimit}) {
    auto r = testing::run_command(testing::plimsoll_binary() + " bench --model " +
                                  testing::stories_path("stories260K.gguf") + " --memory-limit " + limit +
                                  " --fill-pool 2>&1");
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("within plan"), std::string::npos) << r.out;
    const size_t at = r.out.find(" blocks, in");
    ASSERT_NE(at, std::string::npos) << r.out;
    // "N of N blocks": every block written
    const size_t of = r.out.rfind(" of ", at);
    const size_t start = r.out.rfind(", ", of) + 2;
    EXPECT_EQ(r.out.substr(start, of - start), r.out.substr(of + 4, at - of - 4)) << r.out;
  }
}

TEST(Bench, RefusesABudgetTooSmallForOneSequenceWithTheNumbers) {
  auto r = testing::run_command(testing::plimsoll_binary() + " bench --model " +
                                testing::stories_path("stories260K.gguf") + " --memory-limit 16Mi 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("does not fit the memory budget"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--memory-limit"), std::string::npos) << r.out;
}

// Decode after a long context (--decode-context) runs within the sequence
// length; a context that cannot fit is refused, naming the flags and the limit.
TEST(Bench, DecodesAfterTheRequestedContextOrRefusesOneThatCannotFit) {
  const std::string base = testing::plimsoll_binary() + " bench --model " +
                           testing::stories_path("stories260K.gguf") + " --batch 2 --prompt-tokens 8 --decode-tokens 4";
  auto ok = testing::run_command(base + " --decode-context 300 2>&1");
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("decode batch 2: "), std::string::npos) << ok.out;
  auto refused = testing::run_command(base + " --decode-context 510 2>&1");
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.out.find("--decode-context 510 + --decode-tokens 4 exceeds the sequence length 512"),
            std::string::npos)
      << refused.out;
}

}  // namespace
}  // namespace plimsoll
