// The outputs: JSON shape (every figure, exact bytes), serve flags that serve
// accepts, the Kubernetes block and HPA, and the SVG's structure.
#include "planner/report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "planner/svg_chart.h"
#include "planner_fixture.h"

namespace plimsoll::planner {
namespace {

PlanReport sample_report() {
  PlanReport rep;
  auto p = make_static_plan(testing::stories_request());
  EXPECT_TRUE(p.ok());
  rep.plan = *p;
  rep.limit_source = "--memory-limit";
  RampResult r;
  r.mode = "memory cgroup v1";
  r.limit_bytes = p->request.memory_limit_bytes;
  for (int64_t b : {1, 2, 4}) {
    RampStep s;
    s.batch = b;
    s.kv_blocks = 17 * b;
    s.predicted_bytes = (60 + b) << 20;
    s.measured_rss_bytes = (61 + b) << 20;
    s.cgroup_peak_bytes = (62 + b) << 20;
    r.steps.push_back(s);
  }
  r.stopped_because = "reached the plan's concurrent sequences";
  set_ceiling(r);
  rep.ramp = r;
  return rep;
}

TEST(Report, JsonHasEveryPart) {
  const nlohmann::json j = report_json(sample_report());
  for (const char* key : {"model", "inputs", "plan", "serve_flags", "serve_command", "kubernetes", "ramp", "chart"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"budget_bytes", "weights_bytes", "workspace_bytes", "runtime_bytes", "kv_pool_bytes",
                          "max_batch_total_tokens", "max_total_tokens", "max_concurrent_sequences",
                          "safe_client_batch_size"}) {
    EXPECT_TRUE(j["plan"][key].is_number_integer()) << key;
  }
  EXPECT_EQ(j["plan"]["max_total_tokens"], 272);
  EXPECT_EQ(j["ramp"]["steps"].size(), 3u);
  for (const char* key : {"batch", "kv_blocks", "predicted_bytes", "measured_rss_bytes", "cgroup_peak_bytes",
                          "error_ratio", "seconds", "outcome"}) {
    EXPECT_TRUE(j["ramp"]["steps"][0].contains(key)) << key;
  }
  EXPECT_EQ(j["ramp"]["ceiling_batch"], 4);
  EXPECT_EQ(j["kubernetes"]["resources"]["limits"]["memory"], "256Mi");
  EXPECT_EQ(j["kubernetes"]["resources"]["requests"]["memory"], "256Mi");
  EXPECT_EQ(j["kubernetes"]["hpa"]["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70);
  EXPECT_FALSE(j.contains("target"));
}

TEST(Report, ServeFlagsReproduceThePlan) {
  const auto flags = serve_flags(sample_report().plan);
  const std::string all = serve_command(sample_report().plan);
  EXPECT_NE(all.find("--max-total-tokens 272"), std::string::npos);
  EXPECT_NE(all.find("--max-input-tokens 16"), std::string::npos);
  EXPECT_NE(all.find("--memory-limit 256Mi"), std::string::npos);
  EXPECT_EQ(flags.size() % 2, 0u);
}

// The printed command is serve's settings table rendered: the model, its
// tokenizer (a llama2.c model needs it), every plan setting, nothing twice.
TEST(Report, ServeCommandCarriesTheTokenizerAndEveryPlanSetting) {
  PlanRequest r = testing::stories_request();
  r.model.path = "/models/stories260K.bin";
  r.serve.engine.tokenizer_path = "/models/tok512.bin";
  r.serve.engine.step_seqs = 8;
  auto p = make_static_plan(r);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const std::string command = serve_command(*p);
  EXPECT_EQ(command.rfind("plimsoll serve --model /models/stories260K.bin ", 0), 0u) << command;
  for (const char* s : {"--tokenizer /models/tok512.bin", "--max-batch-size 8", "--max-batch-prefill-tokens 512",
                        "--block-size 16", "--kv-cache-dtype f16", "--threads 2", "--http-threads 256",
                        "--payload-limit 2000000", "--memory-fraction 0.9", "--max-concurrent-requests 128"}) {
    EXPECT_NE(command.find(s), std::string::npos) << s << "\n" << command;
  }
  const auto flags = serve_flags(*p);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), "--model"), 0);
  EXPECT_EQ(std::count(flags.begin(), flags.end(), "--tokenizer"), 1);
}

TEST(Report, KubernetesQuantities) {
  EXPECT_EQ(kubernetes_quantity(12 * kGiB), "12Gi");
  EXPECT_EQ(kubernetes_quantity(300 * kMiB), "300Mi");
  EXPECT_EQ(kubernetes_quantity(300 * kMiB + 1), "301Mi");
}

TEST(Report, TextNamesTheNumbers) {
  const std::string t = report_text(sample_report());
  for (const char* s : {"max batch total tokens", "max concurrent seqs", "safe client batch", "peak RSS",
                        "measured ceiling: batch 4", "plimsoll serve --model", "averageUtilization: 70"}) {
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  }
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Chart, SvgHasAxesUnitsLegendSeriesAndLines) {
  const std::string svg = ramp_chart_svg(*sample_report().ramp, "stories260K <test>");
  EXPECT_EQ(svg.rfind("<svg xmlns='http://www.w3.org/2000/svg'", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("memory (MiB)"), std::string::npos);
  EXPECT_NE(svg.find("batch size"), std::string::npos);
  EXPECT_NE(svg.find("stories260K &lt;test&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline"), 3u);  // predicted, RSS, cgroup
  EXPECT_EQ(count(svg, "<circle"), 9u);
  EXPECT_NE(svg.find("limit 256.00 MiB"), std::string::npos);
  EXPECT_NE(svg.find("85 % of the limit"), std::string::npos);
  for (const char* s : {"predicted (memory model)", "measured peak RSS", "measured cgroup peak"}) {
    EXPECT_NE(svg.find(s), std::string::npos) << s;
  }
  EXPECT_GE(count(svg, "text-anchor='middle'>"), 4u);  // x ticks 1, 2, 4 and the title
}

TEST(Chart, StaticOnlyHasOneSeries) {
  RampResult r = *sample_report().ramp;
  for (RampStep& s : r.steps) s.measured_rss_bytes = s.cgroup_peak_bytes = 0;
  const std::string svg = ramp_chart_svg(r, "static");
  EXPECT_EQ(count(svg, "<polyline"), 1u);
  EXPECT_EQ(svg.find("measured"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll::planner
