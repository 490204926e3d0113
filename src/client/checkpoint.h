// The results file as a checkpoint: line i is item i's result, appended and
// flushed in input order; a restart keeps the complete lines, cuts a torn tail.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/client_error.h"

namespace plimsoll::client {

struct CheckpointScan {
  size_t complete_lines = 0;  // lines 0..n-1 end in '\n' and hold {"index": i, ...}
  uint64_t valid_bytes = 0;   // their length
  uint64_t file_bytes = 0;    // the whole file (0 when it does not exist)
  std::vector<nlohmann::json> ids;  // each complete line's "id" (null when absent)
  bool torn() const { return valid_bytes < file_bytes; }
};

// Reads an existing results file (a missing one is empty). The valid prefix
// stops at the first line that is unterminated, not JSON or out of order.
ClientResult<CheckpointScan> scan_checkpoint(const std::string& path);
// Cuts the file to its valid prefix (drops a torn last line).
ClientStatus truncate_checkpoint(const std::string& path, uint64_t valid_bytes);

// Appends lines strictly in index order from `next_index` on: a line that
// arrives early waits in memory until the lines before it are written. Each
// line goes out with one write(2) (no user-space buffer), so a SIGKILL leaves
// whole lines plus at most one torn tail.
class OrderedAppender {
 public:
  static ClientResult<std::unique_ptr<OrderedAppender>> open(const std::string& path, size_t next_index);
  ~OrderedAppender();
  OrderedAppender(const OrderedAppender&) = delete;
  OrderedAppender& operator=(const OrderedAppender&) = delete;

  // `line` without its newline. Errors are sticky (a full disk stops the job).
  ClientStatus complete(size_t index, std::string line);
  size_t next_index() const { return next_index_; }
  size_t buffered() const { return waiting_.size(); }

 private:
  OrderedAppender(int fd, std::string path, size_t next_index);
  ClientStatus write_line(const std::string& line);

  int fd_ = -1;
  std::string path_;
  size_t next_index_ = 0;
  std::map<size_t, std::string> waiting_;
  std::optional<ClientError> failed_;
};

}  // namespace plimsoll::client
