// Checkpoint scan/truncate and the in-order appender over a raw file
// descriptor (O_APPEND, one write per line, EINTR and short writes handled).
#include "client/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace plimsoll::client {
namespace {

ClientError io_error(const std::string& what, const std::string& path) {
  return make_client_error(ErrorKind::kInput, what + " " + path + ": " + std::strerror(errno));
}

// A complete line that belongs at position `index`, or nullopt.
std::optional<nlohmann::json> line_id(std::string_view line, size_t index) {
  nlohmann::json value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded() || !value.is_object()) return std::nullopt;
  auto at = value.find("index");
  if (at == value.end() || !at->is_number_unsigned() || at->get<size_t>() != index) return std::nullopt;
  auto id = value.find("id");
  return id == value.end() ? nlohmann::json() : *id;
}

}  // namespace

ClientResult<CheckpointScan> scan_checkpoint(const std::string& path) {
  CheckpointScan scan;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (access(path.c_str(), F_OK) != 0) return scan;  // nothing done yet
    return io_error("cannot read", path);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  scan.file_bytes = text.size();
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    std::optional<nlohmann::json> id = line_id(std::string_view(text).substr(start, nl - start), scan.complete_lines);
    if (!id) break;
    scan.ids.push_back(std::move(*id));
    ++scan.complete_lines;
    start = nl + 1;
  }
  scan.valid_bytes = start;
  return scan;
}

ClientStatus truncate_checkpoint(const std::string& path, uint64_t valid_bytes) {
  if (::truncate(path.c_str(), static_cast<off_t>(valid_bytes)) != 0) return io_error("cannot truncate", path);
  return Done{};
}

ClientResult<std::unique_ptr<OrderedAppender>> OrderedAppender::open(const std::string& path, size_t next_index) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot open", path);
  return std::unique_ptr<OrderedAppender>(new OrderedAppender(fd, path, next_index));
}

OrderedAppender::OrderedAppender(int fd, std::string path, size_t next_index)
    : fd_(fd), path_(std::move(path)), next_index_(next_index) {}

OrderedAppender::~OrderedAppender() {
  if (fd_ >= 0) ::close(fd_);
}

ClientStatus OrderedAppender::complete(size_t index, std::string line) {
  if (failed_) return *failed_;
  if (index < next_index_ || waiting_.count(index)) {
    return make_client_error(ErrorKind::kInput, "item " + std::to_string(index) + " completed twice");
  }
  waiting_.emplace(index, std::move(line));
  for (auto it = waiting_.find(next_index_); it != waiting_.end(); it = waiting_.find(next_index_)) {
    ClientStatus written = write_line(it->second);
    if (!written) {
      failed_ = written.error();
      return written;
    }
    waiting_.erase(it);
    ++next_index_;
  }
  return Done{};
}

ClientStatus OrderedAppender::write_line(const std::string& line) {
  const std::string out = line + "\n";
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = ::write(fd_, out.data() + sent, out.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot write", path_);
    sent += static_cast<size_t>(n);
  }
  return Done{};
}

}  // namespace plimsoll::client
