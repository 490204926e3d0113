"""The incident (issue 6), under a real kernel memory limit: a naive static
batch of 2,048 sequences is OOM-killed inside a 256 MiB cgroup; `plimsoll
serve` in the same limit answers the same job — 2,048 prompts "Hello",
max_new_tokens 256, in one call — completely, and is never killed."""

import json
import os
import subprocess
import time
import unittest

import memcg
from server import BINARY, STORIES, Server

LIMIT_BYTES = 256 * 1024 * 1024
SKIP = memcg.unavailable_reason()


@unittest.skipIf(SKIP, "no writable memory cgroup: %s" % SKIP)
class IncidentTest(unittest.TestCase):
    def test_naive_static_batch_is_killed_by_the_kernel(self):
        cg = memcg.MemoryCgroup("plimsoll-naive", LIMIT_BYTES)
        try:
            cg.start_sampling()
            p = subprocess.run([BINARY, "bench", "--model", STORIES, "--naive-static-batch", "2048",
                                "--max-total-tokens", "257"], preexec_fn=cg.preexec(), capture_output=True,
                               text=True, timeout=600)
            cg.stop_sampling()
            verdict = cg.verdict()
            print("naive static batch:", verdict, "exit", p.returncode)
            self.assertEqual(p.returncode, -9, p.stdout[-500:] + p.stderr[-500:])  # SIGKILL
            self.assertGreaterEqual(verdict["oom_kills"], 1)
        finally:
            cg.close()

    def test_plimsoll_serves_the_whole_job_within_the_limit(self):
        cg = memcg.MemoryCgroup("plimsoll-serve", LIMIT_BYTES)
        server = None
        try:
            cg.start_sampling()
            # No --memory-limit: the server must find the cgroup's limit itself.
            server = Server("--max-batch-size", "256", cgroup=cg)
            self.assertIn("from cgroup v%d" % cg.version, server.output())
            t0 = time.time()
            status, body, _ = server.post_json("/generate", {"inputs": ["Hello"] * 2048,
                                                             "parameters": {"max_new_tokens": 256}},
                                               timeout_s=1800)
            seconds = time.time() - t0
            self.assertEqual(status, 200, str(body)[:500])
            self.assertEqual(len(body), 2048)
            self.assertTrue(all(item["generated_text"] for item in body))
            self.assertIsNone(server.proc.poll(), "the server died")
            cg.stop_sampling()
            verdict = cg.verdict()
            print("plimsoll serve: %s, 2048 answers in %.1f s" % (verdict, seconds))
            self.assertLess(verdict["peak_bytes"], LIMIT_BYTES)
            self.assertEqual(verdict["oom_kills"], 0)
            self.assertEqual(server.stop(), 0)
            with open(os.environ.get("PLIMSOLL_SYSTEM_REPORT", "/tmp/plimsoll-incident.json"), "w") as f:
                json.dump(dict(verdict, answers=len(body), seconds=seconds), f)
        finally:
            if server:
                server.stop()
            cg.close()


if __name__ == "__main__":
    unittest.main()
