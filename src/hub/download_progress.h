// The progress line of a download on stderr: file, bytes, MiB/s, ETA.
// On a terminal it is redrawn in place at most 5 times a second; otherwise
// (logs, CI, Kubernetes) a plain line every 10 seconds and one at the end.
// HF_HUB_DISABLE_PROGRESS_BARS=1 turns it off.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace plimsoll::hub {

class DownloadProgress {
 public:
  // out == nullptr: silent.
  explicit DownloadProgress(std::FILE* out);

  // A file of `total` bytes (-1: unknown) whose first `already` are on disk (resume).
  void start(const std::string& label, int64_t total, int64_t already);
  void add(int64_t bytes);
  void finish();

  // "org/name model.safetensors: 12.00 MiB / 48.00 MiB (25%), 3.2 MiB/s, ETA 11s"
  static std::string line(const std::string& label, int64_t done, int64_t total, int64_t this_run,
                          double seconds);

 private:
  void draw(bool last);

  std::FILE* out_;
  bool terminal_;
  std::string label_;
  int64_t total_ = -1;
  int64_t done_ = 0;
  int64_t this_run_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace plimsoll::hub
