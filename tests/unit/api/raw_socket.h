// RawSocket: a blocking TCP client for transport tests that must send what
// an HTTP library would not (partial heads, lying lengths, odd framing).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

namespace plimsoll::testing {

class RawSocket {
 public:
  // Connects to 127.0.0.1:port; `receive_buffer_bytes` > 0 shrinks SO_RCVBUF first.
  explicit RawSocket(int port, int receive_buffer_bytes = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (receive_buffer_bytes > 0) {
      ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_buffer_bytes, sizeof receive_buffer_bytes);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  // False when the peer reset or closed the connection.
  bool send(const std::string& bytes) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Everything until the peer closes, or until `timeout` passes.
  std::string read_all(std::chrono::milliseconds timeout) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (read_some(&out, deadline) > 0) {
    }
    return out;
  }
  // Reads until `marker` was received, the peer closed, or `timeout`.
  std::string read_until(const std::string& marker, std::chrono::milliseconds timeout) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (out.find(marker) == std::string::npos && read_some(&out, deadline) > 0) {
    }
    return out;
  }
  // True when the peer has closed (EOF or reset) within `timeout`; data read is discarded.
  bool closed_within(std::chrono::milliseconds timeout) {
    std::string ignored;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      ssize_t n = read_some(&ignored, deadline);
      if (n == 0 || n == -1) return true;
      if (n == -2) return false;
    }
  }

 private:
  // > 0 bytes read, 0 EOF, -1 error, -2 timeout.
  ssize_t read_some(std::string* out, std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -2;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return -2;
    char buf[65536];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) out->append(buf, static_cast<size_t>(n));
    return n < 0 ? -1 : n;
  }

  int fd_ = -1;
  bool connected_ = false;
};

// "HTTP/1.1 431 ..." -> 431; 0 when the text is no response.
inline int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

// The body after the head (no chunked decoding).
inline std::string body_of(const std::string& response) {
  size_t at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

}  // namespace plimsoll::testing
