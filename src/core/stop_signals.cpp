// The flag behind catch_stop_signals(): written by the handler (async-signal-safe:
// one sig_atomic_t store), read by the command between pieces of work.
#include "core/stop_signals.h"

#include <signal.h>

#include <csignal>
#include <initializer_list>

namespace plimsoll {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

void set_stop_handler(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking read or wait returns EINTR, so the command looks
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM}) {
    sigaction(sig, &sa, nullptr);
    sigaddset(&set, sig);
  }
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace

void default_stop_signals() { set_stop_handler(SIG_DFL); }
void catch_stop_signals() { set_stop_handler(on_stop_signal); }

bool stop_requested() { return g_stop_signal != 0; }
int stop_signal() { return g_stop_signal; }
const char* stop_signal_name() {
  switch (g_stop_signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}
int stop_exit_code() { return 128 + g_stop_signal; }

}  // namespace plimsoll
