#!/usr/bin/env python3
"""Interactive time to first token beside a batch job, with and without tenants.

    bench/tenant_ttft.py [--binary build/release/plimsoll] [--prompts 2048] [--new-tokens 256]

Starts `plimsoll serve` on stories260K (--max-batch-size 256) twice: with a tenants file (the batch
call and the short requests under two tenants of weight 1) and without (one default tenant). Each
time: 10 short streamed requests (8 tokens) on the idle server, then one call of PROMPTS x NEW_TOKENS
"Hello" prompts and, while it runs, a short streamed request every 200 ms (at most 100). Prints time
to first token p50/p99/max, idle and beside the batch, and the batch's seconds."""

import argparse
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "system"))
import server as system_server  # noqa: E402
from server import Server  # noqa: E402
import test_tenants as T  # noqa: E402


def pct(samples, p):
    s = sorted(samples)
    return s[min(len(s) - 1, int(p * len(s)))]


def run(tenants, prompts, new_tokens):
    args = ["--max-batch-size", "256"]
    keys = ("", "")
    path = None
    if tenants:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"tenants": [{"name": "batch", "api_key_sha256": [T.sha256(T.BATCH_KEY)]},
                                   {"name": "web", "api_key_sha256": [T.sha256(T.WEB_KEY)]}]}, f)
            path = f.name
        args += ["--tenants", path]
        keys = (T.BATCH_KEY, T.WEB_KEY)
    server = Server(*args)
    try:
        idle = []
        for _ in range(10):
            idle.append(T.first_token_seconds(server, keys[1]))
            time.sleep(0.2)
        done = {}

        def batch():
            t0 = time.time()
            headers = {"Authorization": "Bearer " + keys[0]} if keys[0] else {}
            done["status"] = server.request("POST", "/generate", {"inputs": ["Hello"] * prompts,
                                                                   "parameters": {"max_new_tokens": new_tokens}},
                                            headers=headers, timeout_s=3600)[0]
            done["seconds"] = time.time() - t0

        job = threading.Thread(target=batch)
        job.start()
        server.metrics_when(lambda m: m.get("tgi_batch_current_size", 0) > 0, timeout_s=60)
        busy = []
        while job.is_alive() and len(busy) < 100:
            t0 = time.time()
            busy.append(T.first_token_seconds(server, keys[1]))
            time.sleep(max(0.0, 0.2 - (time.time() - t0)))
        job.join()
        m = server.metrics()
        return idle, busy, done, m.get("plimsoll_preemptions_total", 0)
    finally:
        server.stop()
        if path:
            os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build/release/plimsoll")
    ap.add_argument("--prompts", type=int, default=2048)
    ap.add_argument("--new-tokens", type=int, default=256)
    a = ap.parse_args()
    system_server.BINARY = os.path.abspath(a.binary)
    print("| server | idle TTFT p50 / p99 (s) | beside the batch p50 / p99 / max (s) | requests | batch status, seconds | preemptions |")
    print("| --- | --- | --- | --- | --- | --- |")
    for tenants in (False, True):
        idle, busy, done, preempted = run(tenants, a.prompts, a.new_tokens)
        print("| %s | %.3f / %.3f | %.3f / %.3f / %.3f | %d | %s, %.1f | %d |" % (
            "two tenants (--tenants)" if tenants else "one tenant (no --tenants)", pct(idle, 0.5), pct(idle, 0.99),
            pct(busy, 0.5), pct(busy, 0.99), max(busy), len(busy), done.get("status"), done.get("seconds", 0),
            preempted), flush=True)


if __name__ == "__main__":
    main()
