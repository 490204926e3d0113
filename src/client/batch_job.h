// A resumable batch job (what `plimsoll batch` runs): input JSONL -> results
// JSONL in input order, the output file being the checkpoint.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "client/batch_input.h"
#include "client/client_error.h"
#include "client/retry_policy.h"
#include "client/types.h"

namespace plimsoll::client {

struct JobOptions {
  std::string url;
  std::string input_path;
  std::string output_path;
  Route route = Route::kGenerate;
  int64_t parallel = 4;
  int64_t chunk_size = 0;  // user cap; 0 = the server's safe_client_batch_size
  RetryPolicy retry;
  // vLLM's `priority` sent with every request unless its parameters give one: 1, batch (a
  // server's interactive requests keep the default 0 and go first within a tenant).
  int32_t priority = 1;
  ClientOptions client;
  std::FILE* progress = stderr;  // nullptr: no progress line
};

struct FailureNote {
  size_t index = 0;
  nlohmann::json id;
  ClientError error;
};

struct JobSummary {
  size_t total = 0;         // input items
  size_t already_done = 0;  // found in the output at start
  size_t succeeded = 0;     // this run
  size_t failed = 0;        // this run
  std::map<std::string, int64_t> failures_by_kind;
  std::vector<FailureNote> first_failures;  // up to 10
  double seconds = 0;
  int64_t generated_tokens = 0;
  int64_t retries = 0;
  int64_t chunk_size = 0;
};

// Errors: unreadable input, an output that belongs to another input, a server
// away past the deadline before anything was sent, a failed write.
ClientResult<JobSummary> run_batch_job(const JobOptions& options);

// The end-of-run summary, several lines.
std::string format_summary(const JobSummary& summary);

}  // namespace plimsoll::client
