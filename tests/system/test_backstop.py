"""The memory backstop (issue 17, point 4) under a real kernel memory limit:
`plimsoll serve` in a 512 MiB cgroup with its high-water mark just above its
own idle usage; a second process in the same cgroup allocates and touches
64 MiB. The server must read the kernel's figure, refuse new generation work
with 429 + Retry-After while usage is above the mark (counted and logged),
keep /health at 200, and admit again once the other process is gone."""

import os
import subprocess
import sys
import time
import unittest

import memcg
from server import Server

MIB = 1024 * 1024
LIMIT_BYTES = 512 * MIB
HELPER_BYTES = 64 * MIB
MARK_ABOVE_IDLE_BYTES = 24 * MIB  # re-arm is 2.5 % of the limit (12.8 MiB) lower: idle + 11.2 MiB
SKIP = memcg.unavailable_reason()

# Allocates and touches HELPER_BYTES, says so, and holds them until stdin closes.
HELPER = ("import sys\n"
          "block = bytearray(b'\\x01') * %d\n"
          "print('holding', len(block), flush=True)\n"
          "sys.stdin.read()\n" % HELPER_BYTES)

NORMAL = {"inputs": "Once upon a time", "parameters": {"max_new_tokens": 8}}


def wait_until(what, check, timeout_s=30):
    """Polls check() until it returns a true value; fails with `what` at the deadline."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out after %d s waiting for %s" % (timeout_s, what))


@unittest.skipIf(SKIP, "no writable memory cgroup: %s" % SKIP)
class BackstopTest(unittest.TestCase):
    def setUp(self):
        self.cg = memcg.MemoryCgroup("plimsoll-backstop", LIMIT_BYTES)
        self.server = None
        self.helper = None

    def tearDown(self):
        if self.helper and self.helper.poll() is None:
            self.helper.kill()
            self.helper.wait()
        if self.server:
            self.server.stop()
        self.cg.close()

    def idle_usage_bytes(self):
        """The server's own figure for this cgroup when idle after serving once."""
        probe = Server(cgroup=self.cg)
        try:
            self.assertEqual(probe.post_json("/generate", NORMAL)[0], 200)
            usage = wait_until("a usage reading", lambda: probe.metrics().get("plimsoll_memory_usage_bytes", 0))
            return int(usage)
        finally:
            probe.stop()

    def test_usage_above_the_mark_refuses_new_requests_until_it_falls(self):
        idle = self.idle_usage_bytes()
        mark = idle + MARK_ABOVE_IDLE_BYTES
        self.server = s = Server("--memory-high-water", str(mark), cgroup=self.cg)
        self.assertIn("memory backstop: reading cgroup v%d" % self.cg.version, s.output())
        self.assertEqual(s.post_json("/generate", NORMAL)[0], 200)
        m = s.metrics()
        self.assertEqual(m["plimsoll_memory_high_water_bytes"], mark)
        self.assertEqual(m["plimsoll_memory_limit_bytes"], LIMIT_BYTES)
        self.assertEqual(m["plimsoll_memory_pressure"], 0)
        self.assertEqual(m["plimsoll_memory_pressure_trips_total"], 0)
        print("idle usage %.1f MiB, mark %.1f MiB, re-arm %.1f MiB, usage now %.1f MiB" % (
            idle / MIB, mark / MIB, m["plimsoll_memory_rearm_bytes"] / MIB, m["plimsoll_memory_usage_bytes"] / MIB))

        # Another process in the same cgroup takes 64 MiB: the cgroup's usage crosses the mark.
        self.helper = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       preexec_fn=self.cg.preexec(), text=True)
        self.assertTrue(self.helper.stdout.readline().startswith("holding"))
        tripped_at = time.time()
        wait_until("plimsoll_memory_pressure 1", lambda: s.metrics()["plimsoll_memory_pressure"] == 1)
        print("tripped %.2f s after the helper held its memory" % (time.time() - tripped_at))
        for path, body in (("/generate", NORMAL), ("/generate_stream", NORMAL),
                           ("/v1/completions", {"prompt": "Once", "max_tokens": 4}),
                           ("/tokenize", {"inputs": "Once upon a time"})):
            status, answer, headers = s.post_json(path, body)
            self.assertEqual(status, 429, (path, answer))
            self.assertGreaterEqual(int(headers["Retry-After"]), 1)
            message = answer["error"]["message"] if path.startswith("/v1/") else answer["error"]  # OpenAI's object
            self.assertIn("Memory pressure: usage is", message)
            self.assertIn("high-water mark %.2f MiB" % (mark / MIB), message)
            self.assertIn("(limit 512.00 MiB)", message)
        self.assertEqual(s.get("/health")[0], 200)  # alive: only new work is refused
        m = s.metrics()
        self.assertEqual(m["plimsoll_memory_pressure_trips_total"], 1)
        self.assertEqual(m['plimsoll_rejections_total{reason="memory_pressure"}'], 4)
        self.assertGreaterEqual(m["plimsoll_memory_usage_bytes"], m["plimsoll_memory_rearm_bytes"])
        self.assertIn("memory pressure: usage", s.output())

        # The helper ends: usage falls below the re-arm mark and a normal request is served again.
        self.helper.stdin.close()
        self.assertEqual(self.helper.wait(30), 0)
        ended_at = time.time()
        wait_until("a 200 from /generate", lambda: s.post_json("/generate", NORMAL)[0] == 200)
        print("admitting again %.2f s after the helper ended" % (time.time() - ended_at))
        m = s.metrics()
        self.assertEqual(m["plimsoll_memory_pressure"], 0)
        self.assertLess(m["plimsoll_memory_usage_bytes"], m["plimsoll_memory_rearm_bytes"])
        self.assertIn("memory pressure over after", s.output())
        self.assertEqual(s.get("/health")[0], 200)
        self.assertIsNone(s.proc.poll(), "the server died")
        self.assertEqual(self.cg.oom_kills(), 0)
        self.assertLess(self.cg.peak_bytes(), LIMIT_BYTES)
        self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    unittest.main()
