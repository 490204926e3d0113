"""A real memory cgroup for one test: created under this process's own memory
cgroup (v2 memory.max or v1 memory.limit_in_bytes), sampled, and removed."""

import os
import signal
import threading
import time


def _own_memory_cgroup():
    """(directory, version) of this process's memory cgroup, or (None, reason)."""
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if len(fields) < 5 or len(rfields) < 3:
                continue
            if rfields[0] == "cgroup2":
                mounts[2] = (fields[3], fields[4])
            elif rfields[0] == "cgroup" and "memory" in rfields[2].split(","):
                mounts[1] = (fields[3], fields[4])
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            num, controllers, path = line.rstrip("\n").split(":", 2)
            if num == "0" and controllers == "":
                paths[2] = path
            elif "memory" in controllers.split(","):
                paths[1] = path
    for version in (2, 1):
        if version not in mounts or version not in paths:
            continue
        root, mount_point = mounts[version]
        if version == 2:
            try:
                with open(os.path.join(mount_point, "cgroup.controllers")) as f:
                    if "memory" not in f.read().split():
                        continue
            except OSError:
                continue
        rel = paths[version]
        if root != "/" and rel.startswith(root):
            rel = rel[len(root):]
        d = os.path.join(mount_point, rel.lstrip("/"))
        if not os.path.isdir(d):
            d = mount_point
        return d, version
    return None, "no memory cgroup controller is mounted"


def unavailable_reason():
    """None when a test can create a memory cgroup here, else why not."""
    d, version = _own_memory_cgroup()
    if d is None:
        return version
    probe = os.path.join(d, "plimsoll-probe-%d" % os.getpid())
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as e:
        return "cannot create a cgroup under %s (%s); run as root" % (d, e.strerror)
    return None


class MemoryCgroup:
    def __init__(self, name, limit_bytes):
        parent, self.version = _own_memory_cgroup()
        if parent is None:
            raise RuntimeError(self.version)
        self.path = os.path.join(parent, "%s-%d" % (name, os.getpid()))
        os.mkdir(self.path)
        self.limit_bytes = limit_bytes
        if self.version == 2:
            self._write("memory.max", str(limit_bytes))
            if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                self._write("memory.swap.max", "0")
        else:
            self._write("memory.limit_in_bytes", str(limit_bytes))
            if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
                self._write("memory.memsw.limit_in_bytes", str(limit_bytes))
        self.samples = []
        self._stop = threading.Event()
        self._sampler = None

    def _write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def _read(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def preexec(self):
        """For subprocess.Popen(preexec_fn=...): move the child into the cgroup."""
        path = os.path.join(self.path, "cgroup.procs")

        def enter():
            with open(path, "w") as f:
                f.write(str(os.getpid()))
        return enter

    def usage_bytes(self):
        v = self._read("memory.current" if self.version == 2 else "memory.usage_in_bytes").strip()
        return int(v) if v else 0

    def peak_bytes(self):
        """The kernel's own high-water mark where it keeps one, else the sampled maximum."""
        v = self._read("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes").strip()
        sampled = max((s[1] for s in self.samples), default=0)
        return max(int(v), sampled) if v else sampled

    def reset_peak(self):
        """Starts a new high-water mark (v1 max_usage_in_bytes; v2 memory.peak where the
        kernel lets it be reset, else the cgroup's lifetime peak stays) and new samples."""
        try:
            self._write("memory.peak" if self.version == 2 else "memory.max_usage_in_bytes", "0")
        except OSError:
            pass
        self.samples = []

    def oom_kills(self):
        text = self._read("memory.events" if self.version == 2 else "memory.oom_control")
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def failcnt(self):
        if self.version == 2:
            for line in self._read("memory.events").splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
            return 0
        v = self._read("memory.failcnt").strip()
        return int(v) if v else 0

    def start_sampling(self, interval_s=0.05):
        def loop():
            while not self._stop.is_set():
                self.samples.append((time.time(), self.usage_bytes()))
                self._stop.wait(interval_s)
        self._sampler = threading.Thread(target=loop, daemon=True)
        self._sampler.start()

    def stop_sampling(self):
        self._stop.set()
        if self._sampler:
            self._sampler.join()

    def close(self):
        self.stop_sampling()
        for _ in range(50):
            pids = [p for p in self._read("cgroup.procs").split() if p]
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(int(p), signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.05)
        try:
            os.rmdir(self.path)
        except OSError:
            pass

    def verdict(self):
        return {
            "limit_bytes": self.limit_bytes,
            "peak_bytes": self.peak_bytes(),
            "oom_kills": self.oom_kills(),
            "failcnt": self.failcnt(),
            "cgroup_version": self.version,
        }
