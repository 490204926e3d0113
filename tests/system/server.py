"""Start `plimsoll serve` for a system test (optionally inside a memory
cgroup), talk to it over HTTP on loopback, and stop it with SIGTERM."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.environ.get("PLIMSOLL_BINARY", os.path.join(REPO, "build", "release", "plimsoll"))
SHARED = os.environ.get("PLIMSOLL_SHARED_DIR", os.path.join(os.path.dirname(REPO), "shared"))
# stories260K's files: the shipped models/stories260K/ plus its llama2.c checkpoint, in the
# build folder (tests/CMakeLists.txt, target stories260K_fixture).
STORIES_DIR = os.environ.get("PLIMSOLL_STORIES_DIR", os.path.join(REPO, "build", "release", "stories260K"))
STORIES = os.path.join(STORIES_DIR, "stories260K.gguf")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _preexec(cgroup, nice):
    """The child's set-up before exec: join `cgroup`, lower its CPU priority by `nice`."""
    join = cgroup.preexec() if cgroup else None
    if not join and not nice:
        return None

    def run():
        if join:
            join()
        if nice:
            os.nice(nice)
    return run


class Server:
    def __init__(self, *args, model=STORIES, cgroup=None, env=None, nice=0):
        self.port = free_port()
        self.log_path = "/tmp/plimsoll-system-%d-%d.log" % (os.getpid(), self.port)
        self.log = open(self.log_path, "w")
        cmd = [BINARY, "serve", "--model", model, "--hostname", "127.0.0.1", "--port", str(self.port)] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_preexec(cgroup, nice),
                                     env=dict(os.environ, **(env or {})))
        self.url = "http://127.0.0.1:%d" % self.port
        self.wait_ready()

    def wait_ready(self, timeout_s=60):
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with %s:\n%s" % (self.proc.returncode, self.output()))
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server not ready after %d s:\n%s" % (timeout_s, self.output()))

    def output(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, timeout_s=600):
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        try:
            with urllib.request.urlopen(req, timeout=timeout_s) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def get(self, path, timeout_s=10):
        return self.request("GET", path, timeout_s=timeout_s)

    def post_json(self, path, body, timeout_s=600):
        status, data, headers = self.request("POST", path, body, timeout_s=timeout_s)
        return status, json.loads(data) if data else None, headers

    def metrics(self):
        out = {}
        for line in self.get("/metrics")[1].decode().splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name] = float(value)
        return out

    def metrics_when(self, predicate, timeout_s=15, interval_s=0.05):
        """The first /metrics scrape for which predicate(metrics) holds, or the last one after
        timeout_s (the caller's assertions then say what is wrong). Gauges and counters the
        server updates after the client heard back (plimsoll_kv_blocks_used is refreshed after
        the step whose final events went out; a cancelled request is counted when its handler
        ends) are read this way, never right after a response."""
        deadline = time.time() + timeout_s
        m = self.metrics()
        while not predicate(m) and time.time() < deadline:
            time.sleep(interval_s)
            m = self.metrics()
        return m

    def peak_rss_bytes(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self, timeout_s=60):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode
