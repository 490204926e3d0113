// Runs a shell command and captures its stdout (and exit status), for tests
// that drive the plimsoll binary the way a user does.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace plimsoll::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.out.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace plimsoll::testing
