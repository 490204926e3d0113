// A model reference on the command line: a Hugging Face repo id ("org/name"
// or "name") with an optional "@revision", validated as huggingface_hub does.
#pragma once

#include <string>

#include "core/result.h"

namespace plimsoll::hub {

struct RepoRef {
  std::string repo_id;             // "org/name" or "name"
  std::string revision = "main";   // a branch, tag or 40-hex commit hash
};

// "org/name@rev" -> {org/name, rev}. Errors (kInvalidArgument) say what is
// wrong with the id: huggingface_hub's rules (letters, digits, '-', '_', '.';
// at most one '/'; no "--" or ".."; at most 96 characters per part).
Result<RepoRef> parse_repo_ref(const std::string& text);

// True for a full 40-character lower-case hex commit hash.
bool is_commit_hash(const std::string& revision);

}  // namespace plimsoll::hub
