// serve's settings table as the webhook reads it: every row by each of its
// flags and by its environment variable, flags over env, and every row
// rendered (as the planner renders it) then parsed back to the same settings.
#include "server/serve_settings.h"

#include <gtest/gtest.h>

#include "webhook/container_settings.h"
#include "workload_fixture.h"

namespace plimsoll::webhook {
namespace {

using testing::json;

// A valid value of the row's kind that is not serve's default.
std::string sample(const ServeSetting& row) {
  static const ServeConfig defaults;
  switch (row.kind) {
    case SettingKind::kInt: return "7";
    case SettingKind::kBytes: return "3Mi";
    case SettingKind::kNumber: return "0.5";
    case SettingKind::kBool: return row.read(defaults) == "true" ? "false" : "true";
    case SettingKind::kSwitch: return "true";
    case SettingKind::kString: return "value-of" + row.flag();
    case SettingKind::kDType: return "f32";
    case SettingKind::kFractionOrBytes: return "480Mi";
  }
  return "";
}

Result<ContainerSettings> read_with(const json& env, const json& args) {
  return read_container_settings(testing::serve_container(env, testing::memory("1Gi", "1Gi"), args));
}

// Every row's value, to compare two configs through the table.
std::vector<std::string> all_values(const ServeConfig& c) {
  std::vector<std::string> v;
  for (const ServeSetting& row : serve_settings()) v.push_back(row.flag() + "=" + row.read(c));
  return v;
}

TEST(ServeSettings, TheWebhookReadsEveryRowByEachFlag) {
  for (const ServeSetting& row : serve_settings()) {
    const std::string value = sample(row);
    ASSERT_NE(value, row.read(ServeConfig())) << row.flag();
    for (const std::string& flag : row.flags()) {
      const json args = row.takes_value() ? json{flag, value} : json{flag};
      auto s = read_with(json::array(), args);
      ASSERT_TRUE(s.ok()) << flag << ": " << s.error().message;
      EXPECT_EQ(row.read(s->serve), value) << flag;
      EXPECT_TRUE(s->warnings.empty()) << flag << ": " << s->warnings.at(0);
    }
    if (row.takes_value()) {  // --flag=value
      auto s = read_with(json::array(), json{row.flag() + "=" + value});
      ASSERT_TRUE(s.ok()) << row.flag() << ": " << s.error().message;
      EXPECT_EQ(row.read(s->serve), value) << row.flag();
    }
  }
}

TEST(ServeSettings, TheWebhookReadsEveryRowByItsEnvironmentVariable) {
  int with_env = 0;
  for (const ServeSetting& row : serve_settings()) {
    if (row.env.empty()) continue;
    ++with_env;
    const std::string value = sample(row);
    auto s = read_with(json::array({{{"name", row.env}, {"value", value}}}), json::array());
    ASSERT_TRUE(s.ok()) << row.env << ": " << s.error().message;
    EXPECT_EQ(row.read(s->serve), value) << row.env;
  }
  EXPECT_GE(with_env, static_cast<int>(serve_settings().size()) - 1);  // all but --offline (HF_HUB_OFFLINE)
}

TEST(ServeSettings, FlagsWinOverEnvironmentAndBadValuesNameTheSetting) {
  auto s = read_with(json::array({{{"name", "MAX_BATCH_SIZE"}, {"value", "5"}}}), json{"--max-batch-size", "9"});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->serve.engine.step_seqs, 9);
  auto bad = read_with(json::array({{{"name", "PLIMSOLL_THREADS"}, {"value", "many"}}}), json::array());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("PLIMSOLL_THREADS"), std::string::npos) << bad.error().message;
  auto unknown = read_with(json::array(), json{"--no-such-flag", "--max-batch-size", "3"});
  ASSERT_TRUE(unknown.ok());
  ASSERT_EQ(unknown->warnings.size(), 1u);
  EXPECT_NE(unknown->warnings[0].find("--no-such-flag"), std::string::npos);
  EXPECT_EQ(unknown->serve.engine.step_seqs, 3);
}

TEST(ServeSettings, EveryRowRoundTripsThroughRenderedArgs) {
  ServeConfig all;
  for (const ServeSetting& row : serve_settings()) {
    ServeConfig one;
    ASSERT_TRUE(row.write(one, sample(row)).ok()) << row.flag();
    ASSERT_TRUE(row.write(all, sample(row)).ok()) << row.flag();
    const std::vector<std::string> args = render_serve_args(one);
    auto back = read_with(json::array(), json(args));
    ASSERT_TRUE(back.ok()) << row.flag() << ": " << back.error().message;
    EXPECT_EQ(all_values(back->serve), all_values(one)) << row.flag();
  }
  auto back = read_with(json::array(), json(render_serve_args(all)));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(all_values(back->serve), all_values(all));
}

TEST(ServeSettings, RenderingGivesPlanRowsAlwaysAndOthersWhenNotDefault) {
  ServeConfig c;
  c.engine.tokenizer_path = "/models/tok 512.bin";
  c.api.port = 8080;
  const std::vector<std::string> args = render_serve_args(c);
  auto has = [&](const std::string& flag) { return std::find(args.begin(), args.end(), flag) != args.end(); };
  for (const ServeSetting& row : serve_settings()) {
    if (row.changes_plan && !row.read(c).empty()) {
      EXPECT_TRUE(has(row.flag())) << row.flag();
    }
  }
  EXPECT_TRUE(has("--tokenizer"));
  EXPECT_TRUE(has("--port"));
  EXPECT_FALSE(has("--hostname"));
  EXPECT_FALSE(has("--memory-limit"));  // unset: the cgroup's
  EXPECT_NE(render_serve_command(c).find("--tokenizer '/models/tok 512.bin'"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll::webhook
