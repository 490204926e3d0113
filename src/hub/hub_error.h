// The hub's refusals as errors that name the repo, the file and what to do:
// 401/403 -> set HF_TOKEN (or accept a gated repo's terms), 404 -> repo,
// revision or file not found, network failures -> re-run to resume.
#pragma once

#include <string>

#include "core/result.h"
#include "hub/http_fetch.h"

namespace plimsoll::hub {

// What was being fetched, for messages.
struct FileRef {
  std::string repo_id;
  std::string revision;
  std::string file;
  bool has_token = false;
};

// "org/name@main, config.json: "
std::string file_context(const FileRef& f);

// A non-2xx, non-redirect answer -> kInvalidArgument (401/403: credentials),
// kNotFound (404), kUnavailable (anything else).
Error answer_error(const HttpAnswer& answer, const FileRef& f);

// A network failure while fetching f; `resumable`: bytes are kept for the next run.
Error network_failure(const Error& cause, const FileRef& f, bool resumable);

}  // namespace plimsoll::hub
