// Error messages for hub answers (X-Error-Code: RepoNotFound, RevisionNotFound,
// EntryNotFound, GatedRepo, as the Hugging Face hub sends them).
#include "hub/hub_error.h"

namespace plimsoll::hub {

std::string file_context(const FileRef& f) { return f.repo_id + "@" + f.revision + ", " + f.file + ": "; }

Error answer_error(const HttpAnswer& a, const FileRef& f) {
  const std::string status = "the hub answered " + std::to_string(a.status);
  const std::string detail = a.error_message.empty() ? "" : " (" + a.error_message + ")";
  std::string why;
  ErrorCode code = ErrorCode::kUnavailable;
  if (a.status == 401 || a.status == 403) {
    code = ErrorCode::kInvalidArgument;
    if (a.error_code == "GatedRepo" || a.status == 403) {
      why = "access denied: a gated repo needs its terms accepted on the hub by the account whose token is in HF_TOKEN";
    } else if (f.has_token) {
      why = "the token in HF_TOKEN was refused (wrong or expired?), or the repo does not exist";
    } else {
      why = "the repo is private or gated, or does not exist: set HF_TOKEN to a token with access";
    }
  } else if (a.status == 404) {
    code = ErrorCode::kNotFound;
    if (a.error_code == "RepoNotFound") why = "repository '" + f.repo_id + "' not found (if it is private, set HF_TOKEN)";
    else if (a.error_code == "RevisionNotFound") why = "revision '" + f.revision + "' not found";
    else why = "file '" + f.file + "' not found in the repo";
  } else if (a.status == 416) {
    why = "the partial download does not fit the file (416); it was removed: re-run";
  } else {
    why = "unexpected answer; try again later";
  }
  return make_error(code, file_context(f) + status + ": " + why + detail);
}

Error network_failure(const Error& cause, const FileRef& f, bool resumable) {
  std::string hint = resumable ? "; the bytes received are kept: re-run the command to resume the download"
                               : "; check HF_ENDPOINT and the network, or use the cache offline (HF_HUB_OFFLINE=1)";
  return make_error(cause.code, file_context(f) + cause.message + hint);
}

}  // namespace plimsoll::hub
