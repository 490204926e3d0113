// DownloadProgress: throttled redraws, plain lines when not on a terminal.
#include "hub/download_progress.h"

#include <unistd.h>

#include "core/bytes.h"

namespace plimsoll::hub {
namespace {

using Clock = std::chrono::steady_clock;

std::string eta(double seconds) {
  const long long s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 60) std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

}  // namespace

DownloadProgress::DownloadProgress(std::FILE* out)
    : out_(out), terminal_(out != nullptr && isatty(fileno(out))) {}

std::string DownloadProgress::line(const std::string& label, int64_t done, int64_t total, int64_t this_run,
                                   double seconds) {
  std::string s = label + ": " + format_bytes(done);
  if (total > 0) {
    s += " / " + format_bytes(total) + " (" + std::to_string(done * 100 / total) + "%)";
  }
  if (seconds > 0) {
    const double rate = static_cast<double>(this_run) / seconds;
    char buf[48];
    std::snprintf(buf, sizeof buf, ", %.1f MiB/s", rate / static_cast<double>(kMiB));
    s += buf;
    if (total > done && rate > 0) s += ", ETA " + eta(static_cast<double>(total - done) / rate);
  }
  return s;
}

void DownloadProgress::start(const std::string& label, int64_t total, int64_t already) {
  label_ = label;
  total_ = total;
  done_ = already;
  this_run_ = 0;
  start_ = last_draw_ = Clock::now();
  if (out_ && already > 0) std::fprintf(out_, "%s: resuming at %s\n", label.c_str(), format_bytes(already).c_str());
}

void DownloadProgress::add(int64_t bytes) {
  done_ += bytes;
  this_run_ += bytes;
  const auto every = terminal_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(10000);
  if (out_ && Clock::now() - last_draw_ >= every) draw(false);
}

void DownloadProgress::finish() {
  if (out_) draw(true);
}

void DownloadProgress::draw(bool last) {
  last_draw_ = Clock::now();
  const double seconds = std::chrono::duration<double>(last_draw_ - start_).count();
  const std::string text = line(label_, done_, total_, this_run_, seconds);
  if (terminal_) std::fprintf(out_, "\r\033[K%s%s", text.c_str(), last ? "\n" : "");
  else std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

}  // namespace plimsoll::hub
