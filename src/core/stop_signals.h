// Ctrl-C (SIGINT) and SIGTERM for commands. By default (default_stop_signals(),
// set by main for every command) either ends the process at once, even when the
// shell started it with them ignored (a background job). A command that creates
// something to remove (a child process, a cgroup, a partial file) calls
// catch_stop_signals() instead: the signal then only sets a flag, the command polls
// stop_requested() between pieces of work (blocking calls return EINTR), removes
// what it made, says what was done, and exits with stop_exit_code() (130 / 143).
#pragma once

namespace plimsoll {

void default_stop_signals();
void catch_stop_signals();

bool stop_requested();
int stop_signal();             // SIGINT or SIGTERM once caught, else 0
const char* stop_signal_name();  // "SIGINT", "SIGTERM" or ""
int stop_exit_code();          // 128 + the signal (130 for SIGINT, 143 for SIGTERM)

}  // namespace plimsoll
