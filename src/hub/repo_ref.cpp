// Repo id parsing and validation (huggingface_hub's validate_repo_id rules).
#include "hub/repo_ref.h"

#include <algorithm>
#include <cctype>

namespace plimsoll::hub {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// One part of a repo id: 1..96 name characters, not starting or ending with '-' or '.'.
bool valid_part(const std::string& part) {
  if (part.empty() || part.size() > 96) return false;
  if (!std::all_of(part.begin(), part.end(), is_name_char)) return false;
  const auto edge = [](char c) { return c == '-' || c == '.'; };
  return !edge(part.front()) && !edge(part.back());
}

}  // namespace

bool is_commit_hash(const std::string& revision) {
  return revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

Result<RepoRef> parse_repo_ref(const std::string& text) {
  RepoRef ref;
  const size_t at = text.find('@');
  ref.repo_id = text.substr(0, at);
  if (at != std::string::npos) {
    ref.revision = text.substr(at + 1);
    if (ref.revision.empty() || ref.revision.front() == '/' || ref.revision.back() == '/' ||
        ref.revision.find("..") != std::string::npos || ref.revision.find("//") != std::string::npos) {
      return make_error(ErrorCode::kInvalidArgument, "'" + text + "': '" + ref.revision + "' is not a revision");
    }
  }
  const auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::kInvalidArgument,
                      "'" + text + "' is neither a local path nor a Hugging Face repo id (org/name): " + why);
  };
  const size_t slash = ref.repo_id.find('/');
  if (slash != std::string::npos && ref.repo_id.find('/', slash + 1) != std::string::npos) {
    return bad("more than one '/'");
  }
  if (ref.repo_id.find("--") != std::string::npos || ref.repo_id.find("..") != std::string::npos) {
    return bad("'--' and '..' are not allowed");
  }
  const bool parts_ok = slash == std::string::npos
                            ? valid_part(ref.repo_id)
                            : valid_part(ref.repo_id.substr(0, slash)) && valid_part(ref.repo_id.substr(slash + 1));
  if (!parts_ok) return bad("names are 1 to 96 letters, digits, '-', '_' or '.'");
  return ref;
}

}  // namespace plimsoll::hub
