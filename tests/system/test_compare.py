"""Smoke test of bench/compare: `--quick` on stories260K against Plimsoll alone
(no llama.cpp here). Owns: it exits 0, prints the table, and writes
summary.csv with one row per measurement (prefill, decode b1, and for 1 and 4
clients aggregate tok/s, TTFT p50/p99, peak RSS) with positive figures, and
results.json whose server phases got every requested token (ignore_eos); with
--temperature the clients sample and still get every token; --depth N decodes after an N-token
context (`plimsoll bench --decode-context N`) and says so."""

import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

from server import BINARY, REPO, STORIES

SCRIPT = os.path.join(REPO, "bench", "compare")


@unittest.skipUnless(os.path.exists(STORIES), "no stories260K model: build the stories260K_fixture target")
class CompareQuick(unittest.TestCase):
    def test_quick_run_on_plimsoll_alone(self):
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([sys.executable, SCRIPT, "--quick", STORIES, "--plimsoll", BINARY, "--out", out],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("server 4 clients: TTFT p99", p.stdout)
            with open(os.path.join(out, "summary.csv")) as f:
                rows = {r["key"]: r for r in csv.DictReader(f)}
            expected = ["prefill_tps", "decode_b1_tps"] + [
                "server_c%d_%s" % (c, m) for c in (1, 4) for m in ("tps", "ttft_p50", "ttft_p99", "peak_rss")]
            self.assertEqual(sorted(rows), sorted(expected))
            for key in expected:
                self.assertGreater(float(rows[key]["plimsoll_median"]), 0.0, key)
                self.assertNotIn("llama.cpp_median", rows[key])
            with open(os.path.join(out, "results.json")) as f:
                results = json.load(f)
            self.assertEqual(results["errors"], [])
            for c in (1, 4):
                phase = results["rounds"][0]["server_plimsoll_c%d" % c]
                self.assertEqual(phase["tokens"], 16 * c)
                self.assertEqual(phase["short_requests"], 0)

    def test_depth_decodes_after_that_context(self):
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([sys.executable, SCRIPT, "--quick", STORIES, "--plimsoll", BINARY, "--out", out,
                                "--clients", "none", "--depth", "300", "--kv-cache-dtype", "f32"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("decode batch 1 (16 tokens, after 300 of context)", p.stdout)
            with open(os.path.join(out, "results.json")) as f:
                results = json.load(f)
            self.assertEqual(results["errors"], [])
            self.assertEqual(results["depth"], 300)
            command = " ".join(results["rounds"][0]["bench_plimsoll"]["command"])
            self.assertIn("--decode-context 300", command)
            self.assertIn("--kv-cache-dtype f32", command)
            with open(os.path.join(out, "summary.csv")) as f:
                rows = {r["key"]: r for r in csv.DictReader(f)}
            self.assertGreater(float(rows["decode_b1_tps"]["plimsoll_median"]), 0.0)
            p = subprocess.run([sys.executable, SCRIPT, "--quick", STORIES, "--plimsoll", BINARY, "--out", out,
                                "--clients", "none", "--depth", "100000"], capture_output=True, text=True, timeout=120)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("--depth 100000", p.stderr)

    def test_sampling_clients_get_every_token(self):
        with tempfile.TemporaryDirectory() as out:
            p = subprocess.run([sys.executable, SCRIPT, "--quick", STORIES, "--plimsoll", BINARY, "--out", out,
                                "--no-bench", "--clients", "4", "--temperature", "0.8"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("temperature 0.8", p.stderr + p.stdout)
            with open(os.path.join(out, "results.json")) as f:
                results = json.load(f)
            self.assertEqual(results["errors"], [])
            self.assertEqual(results["temperature"], 0.8)
            phase = results["rounds"][0]["server_plimsoll_c4"]
            self.assertEqual(phase["tokens"], 16 * 4)
            self.assertEqual(phase["short_requests"], 0)


if __name__ == "__main__":
    unittest.main()
