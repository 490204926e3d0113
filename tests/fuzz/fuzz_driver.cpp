// A standalone fuzz driver: links with one target's LLVMFuzzerTestOneInput and
// target_info() (fuzz_target.h) and runs with any compiler, no libFuzzer. It
// runs the target's seeds (and the files of any directory given), then mutants
// of them from a seeded PRNG (byte flips, inserts, deletes, splices, repeats of
// a chunk, nesting, numbers at limits, dictionary tokens) for a bounded time or
// number of runs. For every input it asserts:
//   - the call returns within its deadline (CPU time of the calling thread; a
//     wall-clock limit of 10x that catches a call that blocks);
//   - the heap bytes live at the call's peak (global operator new/delete,
//     replaced here, counted from the call's start) stay within the target's
//     budget: fixed + per input byte x size;
//   - no crash (a signal) and, in a sanitizer build, no sanitizer report.
// A failing input is written to <artifacts>/<target>-<kind>-<pid>.input, its
// path and a preview are printed, and the exit status is 1.
//
// Usage: fuzz_<target> [-seconds=S] [-runs=N] [-seed=N] [-deadline_ms=MS]
//                      [-max_len=BYTES] [-artifacts=DIR] [-write_seeds=DIR]
//                      [DIR | FILE]...
// A DIR adds its files to the corpus; FILEs are run once each (reproduce a
// finding) with the same checks and nothing else. Environment defaults:
// PLIMSOLL_FUZZ_SECONDS (20), PLIMSOLL_FUZZ_RUNS (0: no limit), PLIMSOLL_FUZZ_SEED
// (0: from the clock; printed), PLIMSOLL_FUZZ_DEADLINE_MS (2000; 10000 in a
// sanitizer build), PLIMSOLL_FUZZ_ARTIFACTS (the working directory).
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional, as with libFuzzer: one-time set-up before any input (not counted).
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
// Sanitizer runtimes call this after a report, before they exit (weak: absent
// without a sanitizer).
extern "C" void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(PLIMSOLL_FUZZ_SANITIZED)
constexpr int64_t kDefaultDeadlineMs = 10'000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int64_t kDefaultDeadlineMs = 10'000;
#else
constexpr int64_t kDefaultDeadlineMs = 2'000;
#endif
#else
constexpr int64_t kDefaultDeadlineMs = 2'000;
#endif
constexpr int64_t kWallFactor = 10;  // wall-clock limit = deadline x this

// ---------------------------------------------------------------------------
// Heap meter. Counts malloc_usable_size of every block operator new returns
// (with glibc: the request rounded up to the allocator's granule; under ASan:
// the request). An armed call fails the moment the live bytes pass its limit.

std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_limit{INT64_MAX};
std::atomic<bool> g_armed{false};

[[noreturn]] void fail_budget();

inline void count_alloc(void* p) {
  const auto n = static_cast<int64_t>(malloc_usable_size(p));
  const int64_t live = g_live.fetch_add(n, std::memory_order_relaxed) + n;
  if (!g_armed.load(std::memory_order_relaxed)) return;
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
  if (live > g_limit.load(std::memory_order_relaxed)) fail_budget();
}

inline void count_free(void* p) {
  if (p) g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
}

void* alloc(size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) return nullptr;
  count_alloc(p);
  return p;
}

void* alloc_aligned(size_t n, std::align_val_t align) {
  void* p = nullptr;
  const size_t a = std::max(static_cast<size_t>(align), sizeof(void*));
  if (posix_memalign(&p, a, n ? n : 1) != 0) return nullptr;
  count_alloc(p);
  return p;
}

void release(void* p) {
  count_free(p);
  std::free(p);
}

}  // namespace

void* operator new(size_t n) {
  void* p = alloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) {
  void* p = alloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return alloc(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return alloc(n); }
void* operator new(size_t n, std::align_val_t a) {
  void* p = alloc_aligned(n, a);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n, std::align_val_t a) {
  void* p = alloc_aligned(n, a);
  if (!p) throw std::bad_alloc();
  return p;
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return alloc_aligned(n, a); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return alloc_aligned(n, a); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace {

// ---------------------------------------------------------------------------
// Failure reports: no allocation (they run inside operator new, in signal
// handlers and in the sanitizers' death callback), only write(2).

class Text {
 public:
  Text& add(const char* s) {
    while (*s && n_ + 1 < sizeof(buf_)) buf_[n_++] = *s++;
    buf_[n_] = 0;
    return *this;
  }
  Text& num(int64_t v) {
    char tmp[24];
    int k = 0;
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    do {
      tmp[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u);
    if (v < 0) add("-");
    while (k > 0 && n_ + 1 < sizeof(buf_)) buf_[n_++] = tmp[--k];
    buf_[n_] = 0;
    return *this;
  }
  // Printable ASCII as is, the rest as \xHH; at most `limit` input bytes.
  Text& escaped(const uint8_t* data, size_t size, size_t limit) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < size && i < limit && n_ + 5 < sizeof(buf_); ++i) {
      const uint8_t c = data[i];
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        buf_[n_++] = static_cast<char>(c);
      } else {
        buf_[n_++] = '\\';
        buf_[n_++] = 'x';
        buf_[n_++] = hex[c >> 4];
        buf_[n_++] = hex[c & 15];
      }
    }
    buf_[n_] = 0;
    if (size > limit) add("...");
    return *this;
  }
  const char* c_str() const { return buf_; }
  void write_to(int fd) const {
    size_t off = 0;
    while (off < n_) {
      const ssize_t w = ::write(fd, buf_ + off, n_ - off);
      if (w <= 0) return;
      off += static_cast<size_t>(w);
    }
  }

 private:
  char buf_[4096] = {};
  size_t n_ = 0;
};

struct Current {
  std::atomic<const uint8_t*> data{nullptr};
  std::atomic<size_t> size{0};
  std::atomic<int64_t> budget{0};
  std::atomic<int64_t> base{0};
};
Current g_current;
std::atomic<bool> g_failing{false};
const char* g_name = "target";
char g_artifacts[2048] = ".";
int64_t g_deadline_ms = kDefaultDeadlineMs;

// Writes the current input and says why it failed. exit_now: _exit(1) after
// (a sanitizer's death callback returns to the runtime, which exits itself).
void report(const char* kind, const char* detail, bool exit_now) {
  if (g_failing.exchange(true)) {
    if (!exit_now) return;
    for (;;) pause();  // the other reporter exits the process
  }
  g_armed.store(false);
  const uint8_t* data = g_current.data.load();
  const size_t size = g_current.size.load();
  Text path;
  path.add(g_artifacts).add("/").add(g_name).add("-").add(kind).add("-").num(getpid()).add(".input");
  bool written = false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    size_t off = 0;
    written = true;
    while (data && off < size) {
      const ssize_t w = ::write(fd, data + off, size - off);
      if (w <= 0) {
        written = false;
        break;
      }
      off += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  Text msg;
  msg.add("\nfuzz ").add(g_name).add(": FAILED (").add(kind).add("): ").add(detail).add("\n");
  msg.add("fuzz ").add(g_name).add(": the input (").num(static_cast<int64_t>(size)).add(" bytes) ");
  msg.add(written ? "is in " : "could not be written to ").add(path.c_str()).add("\n");
  msg.add("fuzz ").add(g_name).add(": it begins: ");
  if (data) msg.escaped(data, size, 600);
  msg.add("\nfuzz ").add(g_name).add(": reproduce: fuzz_").add(g_name).add(" ").add(path.c_str()).add("\n");
  msg.write_to(2);
  if (exit_now) _exit(1);
}

[[noreturn]] void fail_budget() {
  Text d;
  const auto size = static_cast<int64_t>(g_current.size.load());
  d.add("the heap held more than ").num(g_current.budget.load()).add(" bytes during the call (the budget for ");
  d.num(size).add(" input bytes; live ").num(g_live.load() - g_current.base.load()).add(")");
  report("budget", d.c_str(), true);
  _exit(1);
}

void on_signal(int sig) {
  Text d;
  const char* name = sig == SIGSEGV   ? "SIGSEGV (stack overflow or bad access)"
                     : sig == SIGBUS  ? "SIGBUS"
                     : sig == SIGFPE  ? "SIGFPE"
                     : sig == SIGILL  ? "SIGILL (a trap)"
                     : sig == SIGABRT ? "SIGABRT (abort: a failed check or an uncaught exception)"
                     : sig == SIGTRAP ? "SIGTRAP"
                                      : "a signal";
  d.add("crashed with ").add(name);
  report("crash", d.c_str(), true);
}

void on_sanitizer_death() { report("sanitizer", "a sanitizer report (above)", false); }

alignas(16) char g_alt_stack[256 << 10];

// Our handlers only where nobody (a sanitizer runtime) installed one.
void install_handlers() {
  stack_t old{};
  if (sigaltstack(nullptr, &old) == 0 && (old.ss_flags & SS_DISABLE)) {
    stack_t ss{};
    ss.ss_sp = g_alt_stack;
    ss.ss_size = sizeof(g_alt_stack);
    sigaltstack(&ss, nullptr);
  }
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) {
    struct sigaction cur {};
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler != SIG_DFL) continue;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction != nullptr) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, nullptr);
  }
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
}

// ---------------------------------------------------------------------------
// Deadline: a watchdog thread reads the calling thread's CPU clock.

clockid_t g_cpu_clock;
std::atomic<bool> g_in_call{false};
std::atomic<int64_t> g_call_cpu_start{0};
std::atomic<int64_t> g_call_wall_start{0};

int64_t now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void fail_deadline(int64_t cpu_ns, int64_t wall_ns) {
  Text d;
  d.add("the call ran past its deadline: ").num(cpu_ns / 1'000'000).add(" ms CPU, ");
  d.num(wall_ns / 1'000'000).add(" ms wall (the limit: ").num(g_deadline_ms).add(" ms CPU, ");
  d.num(g_deadline_ms * kWallFactor).add(" ms wall)");
  report("deadline", d.c_str(), true);
}

void watchdog() {
  for (;;) {
    timespec ts{0, 20'000'000};
    nanosleep(&ts, nullptr);
    if (!g_in_call.load()) continue;
    const int64_t cpu = now_ns(g_cpu_clock) - g_call_cpu_start.load();
    const int64_t wall = now_ns(CLOCK_MONOTONIC) - g_call_wall_start.load();
    if (!g_in_call.load()) continue;
    if (cpu > g_deadline_ms * 1'000'000 || wall > g_deadline_ms * kWallFactor * 1'000'000) {
      fail_deadline(cpu, wall);
    }
  }
}

// ---------------------------------------------------------------------------
// One checked call.

struct CallStats {
  int64_t runs = 0;
  int64_t max_cpu_ns = 0;
  size_t max_cpu_size = 0;
  double max_budget_share = 0;  // peak / budget
  int64_t max_share_peak = 0;
  size_t max_share_size = 0;
  int64_t max_peak = 0;
};

void run_one(const std::string& input, const plimsoll::fuzz::TargetInfo& info, CallStats* stats) {
  // A copy of its own, so reads past the end are the target's (ASan sees them).
  std::vector<uint8_t> bytes(input.begin(), input.end());
  const uint8_t* data = bytes.empty() ? nullptr : bytes.data();
  const int64_t budget =
      info.budget_fixed_bytes + info.budget_per_input_byte * static_cast<int64_t>(input.size());
  g_current.data.store(data);
  g_current.size.store(input.size());
  g_current.budget.store(budget);
  const int64_t base = g_live.load();
  g_current.base.store(base);
  g_peak.store(base);
  g_limit.store(base + budget);
  g_call_wall_start.store(now_ns(CLOCK_MONOTONIC));
  const int64_t cpu0 = now_ns(g_cpu_clock);
  g_call_cpu_start.store(cpu0);
  g_in_call.store(true);
  g_armed.store(true);
  LLVMFuzzerTestOneInput(data, input.size());
  g_armed.store(false);
  g_in_call.store(false);
  const int64_t cpu = now_ns(g_cpu_clock) - cpu0;
  const int64_t peak = g_peak.load() - base;
  if (cpu > g_deadline_ms * 1'000'000) fail_deadline(cpu, now_ns(CLOCK_MONOTONIC) - g_call_wall_start.load());
  if (peak > budget) fail_budget();
  ++stats->runs;
  if (cpu > stats->max_cpu_ns) {
    stats->max_cpu_ns = cpu;
    stats->max_cpu_size = input.size();
  }
  stats->max_peak = std::max(stats->max_peak, peak);
  const double share = budget > 0 ? static_cast<double>(peak) / static_cast<double>(budget) : 0.0;
  if (share > stats->max_budget_share) {
    stats->max_budget_share = share;
    stats->max_share_peak = peak;
    stats->max_share_size = input.size();
  }
  g_current.data.store(nullptr);
  g_current.size.store(0);
}

// ---------------------------------------------------------------------------
// Mutator.

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {  // splitmix64
    uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }
  bool one_in(size_t n) { return below(n) == 0; }

 private:
  uint64_t s_;
};

const char* const kLimitNumbers[] = {
    "0", "-0", "1", "-1", "2", "7", "8", "15", "16", "63", "64", "65", "127", "128", "255", "256", "1000", "1001",
    "1024", "4095", "4096", "65535", "65536", "65537", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "4294967295", "4294967296", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "99999999999999999999999999",
    "1e308", "1e309", "-1e309", "1e-400", "0.5", "-0.0", "1.7976931348623157e308", "4.9e-324", "NaN", "1E2",
    "0x10", "00", "1.", ".5"};

class Mutator {
 public:
  Mutator(const plimsoll::fuzz::TargetInfo& info, size_t max_len, uint64_t seed)
      : info_(info), max_len_(max_len), rng_(seed) {}

  // Applies 1..4 mutations; `other` is a corpus entry for splices.
  std::string mutate(std::string s, const std::string& other) {
    const size_t n = 1 + rng_.below(4);
    for (size_t i = 0; i < n; ++i) one(s, other);
    if (s.size() > max_len_) s.resize(max_len_);
    return s;
  }

  Rng& rng() { return rng_; }

 private:
  size_t pos(const std::string& s) { return rng_.below(s.size() + 1); }

  void one(std::string& s, const std::string& other) {
    switch (rng_.below(12)) {
      case 0:  // flip a bit
        if (!s.empty()) s[rng_.below(s.size())] ^= static_cast<char>(1u << rng_.below(8));
        break;
      case 1: {  // set a byte: random, or an interesting one
        if (s.empty()) break;
        static const char special[] = {'\0', '\\', '"', '\'', '{', '}', '[', ']', '(', ')', '*', '+', '?',
                                       '|', '%', '-', ',', ':', '\n', '\x7f', '\x80', '\xc3', '\xff', '$'};
        s[rng_.below(s.size())] =
            rng_.one_in(2) ? static_cast<char>(rng_.below(256)) : special[rng_.below(sizeof(special))];
        break;
      }
      case 2: {  // insert random bytes
        std::string ins(1 + rng_.below(8), '\0');
        for (char& c : ins) c = static_cast<char>(rng_.one_in(2) ? rng_.below(256) : 0x20 + rng_.below(95));
        s.insert(pos(s), ins);
        break;
      }
      case 3: {  // delete a range
        if (s.empty()) break;
        const size_t at = rng_.below(s.size());
        const size_t len = 1 + rng_.below(std::min<size_t>(s.size() - at, rng_.one_in(4) ? s.size() : 8));
        s.erase(at, len);
        break;
      }
      case 4: {  // splice: a range of another input, inserted or replacing
        if (other.empty()) break;
        const size_t at = rng_.below(other.size());
        const size_t len = 1 + rng_.below(other.size() - at);
        const std::string piece = other.substr(at, len);
        if (rng_.one_in(2) || s.empty()) {
          s.insert(pos(s), piece);
        } else {
          const size_t p = rng_.below(s.size());
          s.replace(p, std::min(piece.size(), s.size() - p), piece);
        }
        break;
      }
      case 5: {  // cross-over: a prefix of this, a suffix of the other
        const size_t a = pos(s);
        const size_t b = rng_.below(other.size() + 1);
        s = s.substr(0, a) + other.substr(b);
        break;
      }
      case 6:
      case 7: {  // repeat a chunk, a few times or up to the size limit
        if (s.empty()) break;
        const size_t at = rng_.below(s.size());
        const size_t len = 1 + rng_.below(std::min<size_t>(s.size() - at, 16));
        const std::string chunk = s.substr(at, len);
        static const size_t counts[] = {1, 2, 3, 7, 16, 64, 100, 1000, 5000, 20000, 70000};
        size_t count = counts[rng_.below(sizeof(counts) / sizeof(counts[0]))];
        const size_t room = max_len_ > s.size() ? (max_len_ - s.size()) / len : 0;
        count = std::min(count, room);
        std::string rep;
        rep.reserve(count * len);
        for (size_t i = 0; i < count; ++i) rep += chunk;
        s.insert(at, rep);
        break;
      }
      case 8: {  // nesting: wrap a range in an opener/closer pair, k deep
        static const std::pair<std::string, std::string> generic[] = {{"(", ")"}, {"[", "]"}, {"{", "}"}};
        const auto& pair = !info_.nests.empty() && rng_.below(3) != 0 ? info_.nests[rng_.below(info_.nests.size())]
                                                                       : generic[rng_.below(3)];
        static const size_t depths[] = {1, 1, 2, 3, 8, 33, 65, 100, 1000, 10000};
        size_t depth = depths[rng_.below(sizeof(depths) / sizeof(depths[0]))];
        const size_t unit = pair.first.size() + pair.second.size();
        const size_t room = max_len_ > s.size() ? (max_len_ - s.size()) / std::max<size_t>(unit, 1) : 0;
        depth = std::min(depth, room);
        size_t a = pos(s), b = pos(s);
        if (a > b) std::swap(a, b);
        const bool balanced = !rng_.one_in(8);
        std::string open, close;
        for (size_t i = 0; i < depth; ++i) {
          open += pair.first;
          if (balanced) close += pair.second;
        }
        s.insert(b, close);
        s.insert(a, open);
        break;
      }
      case 9: {  // a number at a limit, replacing a number or inserted
        const std::string num = kLimitNumbers[rng_.below(sizeof(kLimitNumbers) / sizeof(kLimitNumbers[0]))];
        size_t at = s.empty() ? 0 : rng_.below(s.size());
        while (at < s.size() && !(s[at] >= '0' && s[at] <= '9')) ++at;
        if (at < s.size() && rng_.below(4) != 0) {
          size_t begin = at, end = at;
          if (begin > 0 && s[begin - 1] == '-') --begin;
          while (end < s.size() && ((s[end] >= '0' && s[end] <= '9') || s[end] == '.' || s[end] == 'e' ||
                                    s[end] == 'E' || s[end] == '+' || s[end] == '-')) {
            ++end;
          }
          s.replace(begin, end - begin, num);
        } else {
          s.insert(pos(s), num);
        }
        break;
      }
      default: {  // a dictionary token
        if (info_.dictionary.empty()) break;
        const std::string& tok = info_.dictionary[rng_.below(info_.dictionary.size())];
        if (rng_.one_in(3) && s.size() > tok.size()) {
          const size_t p = rng_.below(s.size() - tok.size() + 1);
          s.replace(p, tok.size(), tok);
        } else {
          s.insert(pos(s), tok);
        }
        break;
      }
    }
  }

  const plimsoll::fuzz::TargetInfo& info_;
  size_t max_len_;
  Rng rng_;
};

// ---------------------------------------------------------------------------

bool flag(const std::string& arg, const char* name, std::string* value) {
  const std::string prefix = std::string("-") + name + "=";
  const std::string prefix2 = "-" + prefix;
  if (arg.rfind(prefix, 0) == 0) {
    *value = arg.substr(prefix.size());
    return true;
  }
  if (arg.rfind(prefix2, 0) == 0) {
    *value = arg.substr(prefix2.size());
    return true;
  }
  return false;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoll(v, nullptr, 10);
}

bool read_file(const std::filesystem::path& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const plimsoll::fuzz::TargetInfo& info = plimsoll::fuzz::target_info();
  g_name = info.name;
  double seconds = static_cast<double>(env_int("PLIMSOLL_FUZZ_SECONDS", 20));
  int64_t runs = env_int("PLIMSOLL_FUZZ_RUNS", 0);
  auto seed = static_cast<uint64_t>(env_int("PLIMSOLL_FUZZ_SEED", 0));
  g_deadline_ms = env_int("PLIMSOLL_FUZZ_DEADLINE_MS", kDefaultDeadlineMs);
  size_t max_len = info.max_input_bytes;
  std::string artifacts = std::getenv("PLIMSOLL_FUZZ_ARTIFACTS") ? std::getenv("PLIMSOLL_FUZZ_ARTIFACTS") : ".";
  std::string write_seeds;
  std::vector<std::string> dirs, files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    if (flag(arg, "seconds", &v) || flag(arg, "max_total_time", &v)) {
      seconds = std::strtod(v.c_str(), nullptr);
    } else if (flag(arg, "runs", &v)) {
      runs = std::strtoll(v.c_str(), nullptr, 10);
    } else if (flag(arg, "seed", &v)) {
      seed = std::strtoull(v.c_str(), nullptr, 10);
    } else if (flag(arg, "deadline_ms", &v)) {
      g_deadline_ms = std::strtoll(v.c_str(), nullptr, 10);
    } else if (flag(arg, "max_len", &v)) {
      max_len = std::strtoull(v.c_str(), nullptr, 10);
    } else if (flag(arg, "artifacts", &v)) {
      artifacts = v;
    } else if (flag(arg, "write_seeds", &v)) {
      write_seeds = v;
    } else if (arg.rfind("-", 0) == 0) {
      std::fprintf(stderr, "fuzz_%s: unknown flag %s (see tests/fuzz/fuzz_driver.cpp)\n", g_name, arg.c_str());
      return 2;
    } else if (std::filesystem::is_directory(arg)) {
      dirs.push_back(arg);
    } else {
      files.push_back(arg);
    }
  }
  if (!write_seeds.empty()) {
    std::filesystem::create_directories(write_seeds);
    for (size_t i = 0; i < info.seeds.size(); ++i) {
      std::ofstream out(std::filesystem::path(write_seeds) / ("seed-" + std::to_string(i)), std::ios::binary);
      out << info.seeds[i];
    }
    std::printf("fuzz_%s: wrote %zu seeds to %s\n", g_name, info.seeds.size(), write_seeds.c_str());
    return 0;
  }
  std::snprintf(g_artifacts, sizeof(g_artifacts), "%s", artifacts.c_str());
  std::error_code ec;
  std::filesystem::create_directories(artifacts, ec);
  if (seed == 0) seed = static_cast<uint64_t>(now_ns(CLOCK_REALTIME)) | 1;

  install_handlers();
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  pthread_getcpuclockid(pthread_self(), &g_cpu_clock);
  std::thread(watchdog).detach();

  CallStats stats;
  if (!files.empty()) {
    for (const std::string& f : files) {
      std::string input;
      if (!read_file(f, &input)) {
        std::fprintf(stderr, "fuzz_%s: cannot read %s\n", g_name, f.c_str());
        return 2;
      }
      run_one(input, info, &stats);
      std::printf("fuzz_%s: %s passed (%zu bytes)\n", g_name, f.c_str(), input.size());
    }
    return 0;
  }

  std::vector<std::string> corpus = info.seeds;
  for (const std::string& d : dirs) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(d)) {
      std::string input;
      if (entry.is_regular_file() && read_file(entry.path(), &input)) corpus.push_back(std::move(input));
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  std::printf("fuzz_%s: seed %llu, %zu corpus inputs, %.0f s%s, deadline %lld ms CPU, budget %lld + %lld B/input byte, "
              "max_len %zu\n",
              g_name, static_cast<unsigned long long>(seed), corpus.size(), seconds,
              runs > 0 ? (" or " + std::to_string(runs) + " runs").c_str() : "", static_cast<long long>(g_deadline_ms),
              static_cast<long long>(info.budget_fixed_bytes), static_cast<long long>(info.budget_per_input_byte),
              max_len);
  std::fflush(stdout);

  const int64_t t0 = now_ns(CLOCK_MONOTONIC);
  for (const std::string& input : corpus) run_one(input, info, &stats);
  const int64_t seed_runs = stats.runs;

  Mutator mutator(info, max_len, seed);
  Rng& rng = mutator.rng();
  std::vector<std::string> recent;  // mutants kept so mutations compound
  constexpr size_t kRecent = 512;
  size_t next_recent = 0;
  const auto end_ns = t0 + static_cast<int64_t>(seconds * 1e9);
  int64_t last_print = t0;
  while (true) {
    // Whichever limit comes first; -seconds=0 with -runs=N: runs only.
    if (runs > 0 && stats.runs - seed_runs >= runs) break;
    const int64_t now = now_ns(CLOCK_MONOTONIC);
    if (seconds > 0 && now >= end_ns) break;
    if (seconds <= 0 && runs <= 0) break;
    if (now - last_print > 5'000'000'000) {
      last_print = now;
      std::printf("fuzz_%s: %lld runs, %.0f s\n", g_name, static_cast<long long>(stats.runs), (now - t0) / 1e9);
      std::fflush(stdout);
    }
    const bool from_recent = !recent.empty() && rng.one_in(2);
    const std::string& base = from_recent ? recent[rng.below(recent.size())] : corpus[rng.below(corpus.size())];
    const std::string& other = rng.one_in(2) || recent.empty() ? corpus[rng.below(corpus.size())]
                                                              : recent[rng.below(recent.size())];
    std::string input = mutator.mutate(base, other);
    run_one(input, info, &stats);
    if (rng.one_in(3)) {
      if (recent.size() < kRecent) {
        recent.push_back(std::move(input));
      } else {
        recent[next_recent++ % kRecent] = std::move(input);
      }
    }
  }
  const double elapsed = static_cast<double>(now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
  std::printf("fuzz_%s: passed: %lld runs in %.1f s (%.0f/s), seed %llu; slowest call %.1f ms CPU (%zu bytes); "
              "highest heap peak %s; closest to the budget %.1f%% (%s for %zu bytes)\n",
              g_name, static_cast<long long>(stats.runs), elapsed, static_cast<double>(stats.runs) / elapsed,
              static_cast<unsigned long long>(seed), static_cast<double>(stats.max_cpu_ns) / 1e6, stats.max_cpu_size,
              mib(stats.max_peak).c_str(), stats.max_budget_share * 100, mib(stats.max_share_peak).c_str(),
              stats.max_share_size);
  return 0;
}
