// ProgressMeter: counts under a mutex, throttled redraws ("\r...\x1b[K" on a
// terminal every 200 ms; a plain line every 5 s otherwise).
#include "client/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace plimsoll::client {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string format_duration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  return buf;
}

ProgressMeter::ProgressMeter(size_t total, size_t already_done, std::FILE* out)
    : total_(total),
      already_done_(already_done),
      out_(out),
      terminal_(out != nullptr && isatty(fileno(out))),
      start_(Clock::now()),
      last_draw_(start_) {}

void ProgressMeter::item_done(bool ok) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++done_;
  if (!ok) ++failed_;
  maybe_draw();
}

void ProgressMeter::add_tokens(int64_t tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_ += tokens;
}

void ProgressMeter::add_retry() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++retries_;
  maybe_draw();
}

void ProgressMeter::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  draw();
  if (out_ && terminal_) std::fputc('\n', out_);
}

double ProgressMeter::seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string ProgressMeter::line() const {
  const double elapsed = std::max(seconds(), 1e-3);
  const size_t finished = already_done_ + done_;
  std::string out = std::to_string(finished) + "/" + std::to_string(total_) + " items";
  if (failed_ > 0) out += " (" + std::to_string(failed_) + " failed)";
  char rate[64];
  std::snprintf(rate, sizeof rate, ", %.1f tokens/s", static_cast<double>(tokens_) / elapsed);
  out += rate;
  if (done_ > 0 && finished < total_) {
    const double per_item = elapsed / static_cast<double>(done_);
    out += ", ETA " + format_duration(per_item * static_cast<double>(total_ - finished));
  }
  out += ", " + std::to_string(retries_) + " retries";
  return out;
}

void ProgressMeter::maybe_draw() {
  const auto interval = terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(5000);
  if (Clock::now() - last_draw_ >= interval) draw();
}

void ProgressMeter::draw() {
  last_draw_ = Clock::now();
  if (!out_) return;
  if (terminal_) {
    std::fprintf(out_, "\rbatch: %s\x1b[K", line().c_str());
  } else {
    std::fprintf(out_, "batch: %s\n", line().c_str());
  }
  std::fflush(out_);
}

}  // namespace plimsoll::client
