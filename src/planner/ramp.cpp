// Ramp rules: the batch schedule, the stop conditions and the measured
// ceiling, kept free of processes and sockets so they are unit-tested.
#include "planner/ramp.h"

#include <cstdio>

namespace plimsoll::planner {

double RampStep::error_ratio() const {
  if (predicted_bytes <= 0) return 0;
  return static_cast<double>(measured_rss_bytes - predicted_bytes) / static_cast<double>(predicted_bytes);
}

std::vector<int64_t> ramp_batches(int64_t last) {
  std::vector<int64_t> out;
  for (int64_t b = 1; b < last; b *= 2) out.push_back(b);
  if (last >= 1) out.push_back(last);
  return out;
}

std::string stop_reason(const RampResult& r) {
  if (r.steps.empty()) return "";
  const RampStep& s = r.steps.back();
  if (!s.ok()) return s.outcome;
  const double line = r.stop_fraction * static_cast<double>(r.limit_bytes);
  if (static_cast<double>(s.measured_bytes()) >= line) {
    return "measured memory reached " + std::to_string(static_cast<int>(r.stop_fraction * 100 + 0.5)) +
           " % of the limit";
  }
  if (r.steps.size() >= 2) {
    const RampStep& p = r.steps[r.steps.size() - 2];
    const bool blocks_flat = s.kv_blocks <= p.kv_blocks;
    const bool memory_flat = s.measured_bytes() < p.measured_bytes() + p.measured_bytes() / 100;
    if (p.ok() && s.batch > p.batch && blocks_flat && memory_flat) return "memory plateaued (KV blocks in use stopped growing)";
  }
  return "";
}

void set_ceiling(RampResult& r) {
  r.ceiling_batch = 0;
  r.ceiling_bytes = 0;
  const double line = r.stop_fraction * static_cast<double>(r.limit_bytes);
  for (const RampStep& s : r.steps) {
    if (s.ok() && static_cast<double>(s.measured_bytes()) < line && s.batch > r.ceiling_batch) {
      r.ceiling_batch = s.batch;
      r.ceiling_bytes = s.measured_bytes();
    }
  }
}

ProgressFn stderr_progress_bar() {
  return [](int64_t done, int64_t total, const std::string& what) {
    const int width = 24;
    const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(width - filled), '.');
    std::fprintf(stderr, "\r[%s] %lld/%lld %-50s", bar.c_str(), static_cast<long long>(done),
                 static_cast<long long>(total), what.c_str());
    if (done >= total) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace plimsoll::planner
