// serve's flags come from its settings table: --help lists every row (flag
// names and environment variables), and CLI11 reads back every rendered row.
#include "cli/serve_flags.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>

#include "run_command.h"
#include "server/serve_settings.h"
#include "test_paths.h"

namespace plimsoll::cli {
namespace {

std::vector<std::string> all_values(const ServeConfig& c) {
  std::vector<std::string> v;
  for (const ServeSetting& row : serve_settings()) v.push_back(row.flag() + "=" + row.read(c));
  return v;
}

// The environment is read only when asked: the test's own (HOSTNAME, PORT...) must not leak in.
Result<ServeConfig> parse_serve(std::vector<std::string> args, bool with_env = false) {
  CLI::App app("serve");
  ServeSettingFlags flags;
  ServeConfig c;
  add_serve_setting_flags(app, flags, c, {.only_in_plan = false, .with_env = with_env, .required = false});
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return make_error(ErrorCode::kInvalidArgument, e.what());
  }
  PLIMSOLL_TRY(apply_serve_setting_flags(flags, c));
  return c;
}

TEST(ServeFlags, HelpListsEveryRow) {
  auto r = plimsoll::testing::run_command(plimsoll::testing::plimsoll_binary() + " serve --help 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const ServeSetting& row : serve_settings()) {
    for (const std::string& flag : row.flags()) {
      EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
    }
    if (!row.env.empty()) {
      EXPECT_NE(r.out.find("Env:" + row.env), std::string::npos) << row.env << "\n" << r.out;
    }
    EXPECT_NE(r.out.find(row.help.substr(0, 30)), std::string::npos) << row.flag();
  }
}

TEST(ServeFlags, EveryRenderedRowParsesBackToTheSameSettings) {
  ServeConfig all;
  // Values of each kind that differ from serve's defaults.
  for (const ServeSetting& row : serve_settings()) {
    std::string v = row.kind == SettingKind::kInt      ? "5"
                    : row.kind == SettingKind::kBytes  ? "7Mi"
                    : row.kind == SettingKind::kNumber ? "0.25"
                    : row.kind == SettingKind::kBool   ? (row.read(all) == "true" ? "false" : "true")
                    : row.kind == SettingKind::kSwitch ? "true"
                    : row.kind == SettingKind::kDType  ? "f32"
                    : row.kind == SettingKind::kFractionOrBytes ? "0.5"
                                                       : "text" + row.flag();
    ASSERT_TRUE(row.write(all, v).ok()) << row.flag();
    ServeConfig one;
    ASSERT_TRUE(row.write(one, v).ok());
    auto back = parse_serve(render_serve_args(one));
    ASSERT_TRUE(back.ok()) << row.flag() << ": " << back.error().message;
    EXPECT_EQ(all_values(*back), all_values(one)) << row.flag();
  }
  auto back = parse_serve(render_serve_args(all));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(all_values(*back), all_values(all));
}

TEST(ServeFlags, EnvironmentFillsWhatFlagsLeaveAndBadValuesNameTheFlag) {
  setenv("MAX_BATCH_SIZE", "11", 1);
  setenv("PLIMSOLL_BLOCK_SIZE", "32", 1);
  auto c = parse_serve({"--block-size", "8"}, /*with_env=*/true);
  unsetenv("MAX_BATCH_SIZE");
  unsetenv("PLIMSOLL_BLOCK_SIZE");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->engine.step_seqs, 11);
  EXPECT_EQ(c->engine.block_tokens, 8);
  auto bad = parse_serve({"--memory-limit", "lots"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--memory-limit"), std::string::npos) << bad.error().message;
}

TEST(ServeFlags, PlanAcceptsServesPlanRows) {
  auto r = plimsoll::testing::run_command(plimsoll::testing::plimsoll_binary() + " plan --help 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const ServeSetting& row : serve_settings()) {
    if (row.in_plan) {
      EXPECT_NE(r.out.find(row.flag()), std::string::npos) << row.flag();
    }
  }
  for (const ServeSetting& row : serve_settings()) {
    if (row.changes_plan && row.flag() != "--max-total-tokens") {
      EXPECT_TRUE(row.in_plan) << row.flag();
    }
  }
}

}  // namespace
}  // namespace plimsoll::cli
