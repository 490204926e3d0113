// Local ramp: spawn, confine, measure. The model file's page cache is dropped
// before each step so the child's cgroup is charged for the weights it maps.
#include "planner/local_ramp.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "core/stop_signals.h"
#include "memory/resident_model.h"
#include "planner/child_cgroup.h"
#include "planner/ramp_child.h"

namespace plimsoll::planner {
namespace {

struct ChildRun {
  std::string stdout_text;
  int wait_status = 0;
  bool interrupted = false;  // a stop signal came: the child was killed (SIGKILL) and reaped
};

void drop_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// fork + exec; the child enters `procs_file` (when given) before exec.
Result<ChildRun> spawn(const std::string& exe, const std::vector<std::string>& args, const std::string& procs_file,
                       const std::string& log_path) {
  int out[2];
  if (::pipe(out) != 0) return make_error(ErrorCode::kIo, "pipe failed");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return make_error(ErrorCode::kIo, "fork failed");
  if (pid == 0) {
    if (!procs_file.empty()) {
      const int fd = ::open(procs_file.c_str(), O_WRONLY);
      if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(126);
      ::close(fd);
    }
    ::dup2(out[1], 1);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) ::dup2(log, 2);
    ::close(out[0]);
    ::close(out[1]);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ChildRun run;
  char buf[4096];
  for (;;) {  // the child's report, looking for a stop signal every 100 ms
    if (stop_requested()) {
      ::kill(pid, SIGKILL);
      run.interrupted = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // timeout or EINTR
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    run.stdout_text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  while (::waitpid(pid, &run.wait_status, 0) < 0 && errno == EINTR) {
    if (stop_requested() && !run.interrupted) {
      ::kill(pid, SIGKILL);
      run.interrupted = true;
    }
  }
  // A terminal's Ctrl-C reaches the child too: it may have died of it before we looked.
  run.interrupted = run.interrupted || stop_requested();
  return run;
}

std::string last_line(const std::string& text) {
  const size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

RampStep failed(RampStep step, const Error& e) {
  step.outcome = "error: " + e.message;
  return step;
}

RampStep measure_step(const StaticPlan& sp, const LocalRampOptions& o, int64_t batch, bool cgroup_ok) {
  RampStep step;
  step.batch = batch;
  step.kv_blocks = kv_blocks_for_sequences(sp.plan, batch, sp.sequence_tokens);
  step.predicted_bytes = predict_resident(sp.plan, sp.request.model.runtime_base_bytes, step.kv_blocks).total_bytes();
  std::optional<ChildCgroup> cg;
  if (cgroup_ok) {
    auto c = ChildCgroup::create("plimsoll-ramp-" + std::to_string(batch), sp.request.memory_limit_bytes);
    if (!c.ok()) return failed(step, c.error());
    cg.emplace(std::move(*c));
  }
  drop_page_cache(sp.request.model.path);
  std::vector<std::string> args = {"plimsoll"};
  args.insert(args.end(), o.child_args.begin(), o.child_args.end());
  args.push_back("--ramp-child-batch");
  args.push_back(std::to_string(batch));
  const std::string log = "/tmp/plimsoll-ramp-" + std::to_string(::getpid()) + "-" + std::to_string(batch) + ".log";
  auto run = spawn(o.self_exe, args, cg ? cg->procs_file() : "", log);
  if (!run.ok()) return failed(step, run.error());
  if (run->interrupted) {  // the child is gone; its cgroup goes with `cg`
    ::unlink(log.c_str());
    step.outcome = std::string("interrupted by ") + stop_signal_name();
    return step;
  }
  const ChildReport r = parse_child_report(last_line(run->stdout_text));
  if (r.fits && r.batch > 0 && r.batch < batch) {  // the child's own plan held a few fewer (see ramp_child)
    step.batch = r.batch;
    step.kv_blocks = kv_blocks_for_sequences(sp.plan, r.batch, sp.sequence_tokens);
    step.predicted_bytes = predict_resident(sp.plan, sp.request.model.runtime_base_bytes, step.kv_blocks).total_bytes();
  }
  step.measured_rss_bytes = r.peak_resident_bytes;
  step.seconds = r.seconds;
  if (cg) step.cgroup_peak_bytes = cg->peak_bytes();
  const bool killed = WIFSIGNALED(run->wait_status) || (cg && cg->oom_kills() > 0);
  if (killed) {
    step.outcome = "killed";
  } else if (!r.error.empty()) {
    step.outcome = "error: " + r.error + " (log " + log + ")";
  } else if (!r.fits) {
    step.outcome = "does not fit";
  } else {
    ::unlink(log.c_str());
  }
  return step;
}

}  // namespace

Result<RampResult> run_local_ramp(const StaticPlan& sp, const LocalRampOptions& o, const ProgressFn& progress) {
  RampResult r;
  r.limit_bytes = sp.request.memory_limit_bytes;
  r.stop_fraction = o.stop_fraction;
  std::string why_not = o.use_cgroup ? child_cgroup_unavailable_reason() : "not asked for (--no-cgroup)";
  const bool cgroup_ok = why_not.empty();
  if (cgroup_ok) {
    auto probe = ChildCgroup::create("plimsoll-probe", r.limit_bytes);
    r.mode = probe.ok() ? "memory cgroup v" + std::to_string(probe->version()) + " per step, under " +
                              probe->dir().substr(0, probe->dir().rfind('/'))
                        : "memory cgroup";
  } else {
    r.mode = "plain child process (no memory cgroup: " + why_not + ")";
  }
  const std::vector<int64_t> batches = ramp_batches(std::max<int64_t>(1, sp.max_concurrent_sequences));
  for (size_t i = 0; i < batches.size(); ++i) {
    if (stop_requested()) {
      r.stopped_because = std::string("interrupted by ") + stop_signal_name();
      break;
    }
    progress(static_cast<int64_t>(i), static_cast<int64_t>(batches.size()),
             "batch " + std::to_string(batches[i]) + " x " + std::to_string(sp.sequence_tokens) + " tokens");
    r.steps.push_back(measure_step(sp, o, batches[i], cgroup_ok));
    r.stopped_because = stop_requested() ? std::string("interrupted by ") + stop_signal_name() : stop_reason(r);
    if (!r.stopped_because.empty()) break;
  }
  if (!stop_requested()) progress(static_cast<int64_t>(batches.size()), static_cast<int64_t>(batches.size()), "done");
  if (stop_requested()) std::fprintf(stderr, "\n");
  if (r.stopped_because.empty()) r.stopped_because = "reached the plan's concurrent sequences";
  set_ceiling(r);
  return r;
}

}  // namespace plimsoll::planner
