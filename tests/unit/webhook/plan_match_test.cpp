// The webhook's plan is the server's plan: for the same settings it equals
// plan_memory on the PlanInputs engine_setup builds, and the table bench prints.
#include "api/api_config.h"
#include "api/body_budget.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "../cli/run_command.h"
#include "core/bytes.h"
#include "engine/batch_engine.h"
#include "formats/model_file.h"
#include "test_paths.h"
#include "webhook/admission_policy.h"
#include "workload_fixture.h"

namespace plimsoll::webhook {
namespace {

using testing::json;

// The real stories260K's shape and weight bytes, declared as a user would.
json annotations_for(const LoadedModel& m, const std::string& runtime) {
  const ModelConfig& c = m.config;
  return {{"plimsoll.dev/model-weights-bytes", std::to_string(m.tensors.total_bytes())},
          {"plimsoll.dev/model-layers", std::to_string(c.n_layers)},
          {"plimsoll.dev/model-heads", std::to_string(c.n_heads)},
          {"plimsoll.dev/model-kv-heads", std::to_string(c.n_kv_heads)},
          {"plimsoll.dev/model-dim", std::to_string(c.dim)},
          {"plimsoll.dev/model-ffn", std::to_string(c.ffn_dim)},
          {"plimsoll.dev/model-vocab", std::to_string(c.vocab_size)},
          {"plimsoll.dev/model-context", std::to_string(c.max_seq_len)},
          {"plimsoll.dev/runtime-bytes", runtime}};
}

Result<LoadedModel> stories() { return load_model(plimsoll::testing::stories_path("stories260K.gguf")); }

TEST(PlanMatch, EqualsPlanMemoryOnEngineSetupsInputs) {
  auto model = stories();
  ASSERT_TRUE(model.ok()) << model.error().message;
  const json args = {"--max-total-tokens", "200", "--max-batch-prefill-tokens", "96", "--max-batch-size", "12",
                     "--max-concurrent-requests", "40", "--block-size", "8", "--threads", "3",
                     "--http-threads", "16", "--payload-limit", "1000000", "--max-connections", "64",
                     "--memory-fraction", "0.8", "--grammar-cache-memory", "8Mi"};
  const json c = testing::serve_container(json::array(), testing::memory("128Mi", "128Mi"), args);
  const Decision d = decide(testing::deployment(c, annotations_for(*model, "40Mi")), {});
  ASSERT_TRUE(d.allowed) << d.message;
  ASSERT_TRUE(d.verdicts.at(0).plan);
  const MemoryPlan& got = *d.verdicts[0].plan;

  // PlanInputs written out for these flags: the engine's workspace, the HTTP transport's worst case.
  PlanInputs in;
  in.config = model->config;
  in.weights_bytes = model->tensors.total_bytes();
  in.block_tokens = 8;
  in.prefix_caching = true;  // serve's default
  in.kv_bookkeeping_bytes_per_block = KvBlockPool::bookkeeping_bytes_per_block(8, true);
  in.max_total_tokens = 200;
  in.workspace = BatchEngine::workspace_sizes(model->config, 96, 12, 3, 200);
  in.max_concurrent_requests = 40;
  in.runtime_bytes = 40 * kMiB;
  in.grammar_cache_bytes = 8 * kMiB;  // --grammar-cache-memory (serve's 32Mi default leaves no room in 128Mi here)
  api::ApiConfig http;
  http.threads = 16;
  http.payload_limit_bytes = 1'000'000;
  http.max_connections = 64;
  in.transport_bytes = api::transport_worst_case_bytes(http, 40);
  in.budget_bytes = static_cast<int64_t>(static_cast<double>(128 * kMiB) * 0.8);
  auto want = plan_memory(in);
  ASSERT_TRUE(want.ok()) << want.error().message;
  EXPECT_EQ(got.table(), want->table());
  EXPECT_EQ(got.planned_bytes(), want->planned_bytes());
  EXPECT_EQ(got.kv_blocks, want->kv_blocks);
  EXPECT_EQ(got.workspace_bytes, want->workspace_bytes);
  EXPECT_EQ(got.request_bytes, want->request_bytes);
  EXPECT_EQ(got.grammar_cache_bytes, 8 * kMiB);
  EXPECT_EQ(got.transport_bytes, want->transport_bytes);
  EXPECT_EQ(got.runtime_bytes, want->runtime_bytes);
}

// "  weights    1.00 MiB  note" -> "1.00 MiB"
std::string row_bytes(const std::string& table, const std::string& name) {
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    const size_t at = line.find("  " + name + " ");
    if (at != 0) continue;
    std::istringstream words(line.substr(at + name.size() + 2));
    std::string number, unit;
    words >> number >> unit;
    return number + " " + unit;
  }
  return "<no row " + name + ">";
}

TEST(PlanMatch, MatchesTheTableBenchPrints) {
  auto model = stories();
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto r = plimsoll::testing::run_command(
      plimsoll::testing::plimsoll_binary() + " bench --model " + plimsoll::testing::stories_path("stories260K.gguf") +
      " --memory-limit 512Mi --max-total-tokens 256 --max-batch-prefill-tokens 128 --threads 2 --batch 1"
      " --prompt-tokens 8 --decode-tokens 2 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The rows compared do not depend on the budget (ASan raises the runtime bench measures);
  // serve counts the HTTP transport bench does not have.
  const json args = {"--max-total-tokens", "256", "--max-batch-prefill-tokens", "128", "--threads", "2"};
  const json c = testing::serve_container(json::array(), testing::memory("512Mi", "512Mi"), args);
  const Decision d = decide(testing::deployment(c, annotations_for(*model, "40Mi")), {});
  ASSERT_TRUE(d.allowed) << d.message;
  const MemoryPlan& p = *d.verdicts.at(0).plan;
  EXPECT_EQ(row_bytes(r.out, "weights"), format_bytes(p.weights_bytes)) << r.out;
  EXPECT_EQ(row_bytes(r.out, "step workspace"), format_bytes(p.workspace_bytes)) << r.out;
  // Bench serves no clients: its request term is 1 MiB, serve's the admission budget.
  EXPECT_EQ(row_bytes(r.out, "requests+responses"), "1.00 MiB") << r.out;
  EXPECT_GT(p.request_bytes, int64_t{1} << 20);
  EXPECT_NE(r.out.find("tokens x " + format_bytes(p.kv_bytes_per_token) + "/token"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sequences of 256)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace plimsoll::webhook
