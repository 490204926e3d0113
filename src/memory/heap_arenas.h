// Bounds what glibc's malloc keeps of freed memory. By default it gives each
// thread that allocates its own arena (up to 8 x cores) and never hands free
// space in one arena to another, so a transient peak (a 2 MB body's JSON tree,
// a big answer) is kept once per I/O and worker thread: on 2 cores the
// hostile suite's fuzz run reached a 504 MiB cgroup peak with ~100 MiB live,
// past the 460 MiB plan. Two arenas keep that peak at ~160 MiB (see
// docs/reliability.md). The memory watcher's malloc_trim returns the rest
// under pressure.
#pragma once

#include <string>

namespace plimsoll {

inline constexpr int kServeHeapArenas = 2;

// Caps malloc's arenas at `arenas` unless MALLOC_ARENA_MAX is set (the
// operator's choice wins). Call before any thread starts. Returns a line for
// the start-up log: what was set, or why not.
std::string bound_heap_arenas(int arenas = kServeHeapArenas);

}  // namespace plimsoll
