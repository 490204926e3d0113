// The progress line of a batch on stderr: items done/total, tokens/s, ETA and
// retries; redrawn in place on a terminal, else one line every few seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace plimsoll::client {

class ProgressMeter {
 public:
  // `already_done` items were in the output before this run (resume).
  ProgressMeter(size_t total, size_t already_done, std::FILE* out);

  void item_done(bool ok);
  void add_tokens(int64_t tokens);
  void add_retry();
  // The last redraw, ending the line.
  void finish();

  // "120/2048 items (3 failed), 456 tokens/s, ETA 1m23s, 5 retries"
  std::string line() const;

 private:
  void maybe_draw();
  void draw();
  double seconds() const;

  const size_t total_;
  const size_t already_done_;
  std::FILE* out_;
  const bool terminal_;
  const std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  mutable std::mutex mutex_;
  size_t done_ = 0;  // this run
  size_t failed_ = 0;
  int64_t tokens_ = 0;
  int64_t retries_ = 0;
};

// "1h02m", "3m05s", "42s"
std::string format_duration(double seconds);

}  // namespace plimsoll::client
