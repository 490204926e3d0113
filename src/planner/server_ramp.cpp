// Server ramp: each step sends `c` concurrent /generate calls and samples
// /metrics every 50 ms; predictions come from the plan the server publishes.
#include "planner/server_ramp.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "memory/resident_model.h"

namespace plimsoll::planner {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ServerView {
  json info;
  std::map<std::string, double> metrics;
  double metric(const std::string& name) const {
    auto it = metrics.find(name);
    return it == metrics.end() ? 0 : it->second;
  }
};

Result<std::string> get(httplib::Client& c, const std::string& path) {
  auto res = c.Get(path);
  if (!res) return make_error(ErrorCode::kIo, "GET " + path + ": " + httplib::to_string(res.error()));
  if (res->status != 200) return make_error(ErrorCode::kUnavailable, "GET " + path + ": HTTP " + std::to_string(res->status));
  return res->body;
}

Result<ServerView> read_view(httplib::Client& c) {
  ServerView v;
  PLIMSOLL_ASSIGN(std::string info, get(c, "/info"));
  v.info = json::parse(info, nullptr, false);
  if (!v.info.is_object()) return make_error(ErrorCode::kInvalidArgument, "/info is not a JSON object");
  PLIMSOLL_ASSIGN(std::string metrics, get(c, "/metrics"));
  v.metrics = parse_prometheus_text(metrics);
  return v;
}

// The plan as the server publishes it, in the memory model's terms.
MemoryPlan published_plan(const ServerView& v) {
  MemoryPlan p;
  p.kv_blocks = static_cast<int64_t>(v.metric("plimsoll_kv_blocks_capacity"));
  p.max_batch_total_tokens = v.info.value("max_batch_total_tokens", int64_t{0});
  p.inputs.block_tokens = p.kv_blocks > 0 ? std::max<int64_t>(1, p.max_batch_total_tokens / p.kv_blocks) : 16;
  p.kv_pool_bytes = static_cast<int64_t>(v.metric("plimsoll_memory_planned_bytes{part=\"kv\"}"));
  p.kv_block_bytes = p.kv_blocks > 0 ? p.kv_pool_bytes / p.kv_blocks : 0;
  p.weights_bytes = static_cast<int64_t>(v.metric("plimsoll_memory_planned_bytes{part=\"weights\"}"));
  p.workspace_bytes = static_cast<int64_t>(v.metric("plimsoll_memory_planned_bytes{part=\"workspace\"}"));
  p.workspace.step_tokens = v.info.value("max_batch_prefill_tokens", int64_t{512});
  p.workspace.step_seqs = v.info.value("max_batch_size", int64_t{64});
  p.max_total_tokens = v.info.value("max_total_tokens", int64_t{0});
  return p;
}

// A text of about `tokens` tokens: words counted with the server's /tokenize.
Result<std::string> synthetic_prompt(httplib::Client& c, int64_t tokens) {
  std::string text = "Once";
  const std::string words[] = {" upon", " a", " time", " there", " was", " a", " little", " cat", "."};
  for (size_t i = 0;; ++i) {
    const std::string next = text + words[i % 9];
    auto res = c.Post("/tokenize", json({{"inputs", next}}).dump(), "application/json");
    if (!res || res->status != 200) return make_error(ErrorCode::kIo, "POST /tokenize failed");
    const json ids = json::parse(res->body, nullptr, false);
    if (!ids.is_array() || static_cast<int64_t>(ids.size()) >= tokens) return text;
    text = next;
  }
}

struct StepLoad {
  std::atomic<bool> done{false};
  double peak_resident = 0, peak_blocks = 0;
  int failures = 0;
  int last_status = 0;  // HTTP status of a failed call (0: no answer)
};

void sample_metrics(const std::string& url, StepLoad& load) {
  httplib::Client c(url);
  while (!load.done.load()) {
    if (auto res = c.Get("/metrics"); res && res->status == 200) {
      const auto m = parse_prometheus_text(res->body);
      load.peak_resident = std::max(load.peak_resident, m.count("plimsoll_memory_resident_bytes") ? m.at("plimsoll_memory_resident_bytes") : 0);
      load.peak_blocks = std::max(load.peak_blocks, m.count("plimsoll_kv_blocks_used") ? m.at("plimsoll_kv_blocks_used") : 0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void send_load(const std::string& url, const std::string& prompt, int64_t n_new, int64_t concurrency, StepLoad& load) {
  std::vector<std::thread> clients;
  std::atomic<int> failures{0}, last_status{0};
  const std::string body = json({{"inputs", prompt}, {"parameters", {{"max_new_tokens", n_new}}}}).dump();
  for (int64_t i = 0; i < concurrency; ++i) {
    clients.emplace_back([&] {
      httplib::Client c(url);
      c.set_read_timeout(600, 0);
      auto res = c.Post("/generate", body, "application/json");
      if (!res || res->status != 200) {
        failures++;
        last_status = res ? res->status : 0;
      }
    });
  }
  for (auto& t : clients) t.join();
  load.failures = failures.load();
  load.last_status = last_status.load();
}

RampStep run_step(const ServerRampOptions& o, const MemoryPlan& plan, int64_t base, const std::string& prompt,
                  int64_t prompt_tokens, int64_t c) {
  RampStep step;
  step.batch = c;
  const int64_t fits = plan.blocks_per_full_sequence > 0 ? plan.kv_blocks / plan.blocks_per_full_sequence : c;
  step.kv_blocks = kv_blocks_for_sequences(plan, std::min(c, fits), prompt_tokens + o.max_new_tokens);
  step.predicted_bytes = predict_resident(plan, base, step.kv_blocks).total_bytes();
  StepLoad load;
  const auto t0 = Clock::now();
  std::thread sampler(sample_metrics, o.url, std::ref(load));
  send_load(o.url, prompt, o.max_new_tokens, c, load);
  load.done = true;
  sampler.join();
  step.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  step.measured_rss_bytes = static_cast<int64_t>(load.peak_resident);
  if (load.failures > 0) step.outcome = "error: " + std::to_string(load.failures) + " of " + std::to_string(c) + " calls failed (HTTP " +
                   std::to_string(load.last_status) + ")";
  return step;
}

}  // namespace

std::map<std::string, double> parse_prometheus_text(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    try {
      out[line.substr(0, sp)] = std::stod(line.substr(sp + 1));
    } catch (...) {
    }
  }
  return out;
}

Result<RampResult> run_server_ramp(const ServerRampOptions& o, const ProgressFn& progress) {
  httplib::Client c(o.url);
  c.set_read_timeout(60, 0);
  PLIMSOLL_ASSIGN(ServerView v, read_view(c));
  MemoryPlan plan = published_plan(v);
  PLIMSOLL_ASSIGN(std::string prompt, synthetic_prompt(c, o.prompt_tokens));
  const int64_t seq_tokens = o.prompt_tokens + o.max_new_tokens;
  plan.blocks_per_full_sequence = (seq_tokens + plan.inputs.block_tokens - 1) / plan.inputs.block_tokens;
  RampResult r;
  r.mode = "server " + o.url + " (plimsoll_memory_resident_bytes sampled every 50 ms)";
  r.stop_fraction = o.stop_fraction;
  r.limit_bytes = o.memory_limit_bytes > 0
                      ? o.memory_limit_bytes
                      : static_cast<int64_t>(v.metric("plimsoll_memory_budget_bytes") / o.memory_fraction);
  // Idle: runtime + weights + workspace + the warm-up's KV blocks are resident already.
  const int64_t idle = static_cast<int64_t>(v.metric("plimsoll_memory_resident_bytes"));
  const int64_t base = idle - predict_resident(plan, 0, 0).total_bytes();
  const int64_t fits = plan.blocks_per_full_sequence > 0 ? plan.kv_blocks / plan.blocks_per_full_sequence : 1;
  const int64_t last = std::min<int64_t>(v.info.value("max_concurrent_requests", int64_t{128}), 2 * std::max<int64_t>(1, fits));
  const std::vector<int64_t> batches = ramp_batches(last);
  for (size_t i = 0; i < batches.size(); ++i) {
    progress(static_cast<int64_t>(i), static_cast<int64_t>(batches.size()),
             "concurrency " + std::to_string(batches[i]));
    r.steps.push_back(run_step(o, plan, base, prompt, o.prompt_tokens, batches[i]));
    r.stopped_because = stop_reason(r);
    if (!r.stopped_because.empty()) break;
  }
  progress(static_cast<int64_t>(batches.size()), static_cast<int64_t>(batches.size()), "done");
  if (r.stopped_because.empty()) r.stopped_because = "reached twice the sequences the plan holds (or the request limit)";
  set_ceiling(r);
  return r;
}

}  // namespace plimsoll::planner
