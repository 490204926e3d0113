// Locating the listening socket by port through /proc/self/fd and re-listening.
#include "api/listen_backlog.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>

namespace plimsoll::api {
namespace {

bool is_listening_on(int fd, int port) {
  int accepting = 0;
  socklen_t len = sizeof accepting;
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) return false;
  sockaddr_storage addr{};
  socklen_t addr_len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) != 0) return false;
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port) == port;
  if (addr.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port) == port;
  return false;
}

}  // namespace

bool raise_listen_backlog(int port, int backlog) {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return false;
  bool raised = false;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0') continue;
    struct stat st {};
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    if (is_listening_on(static_cast<int>(fd), port) && listen(static_cast<int>(fd), backlog) == 0) raised = true;
  }
  closedir(dir);
  return raised;
}

}  // namespace plimsoll::api
