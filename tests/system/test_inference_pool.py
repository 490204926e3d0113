"""Memory-aware routing across an inference pool, simulated on loopback.

Three `plimsoll serve` replicas with different memory limits form the pool: each
limit is what `plimsoll plan --target-concurrency S` says S sequences of P + N
tokens need (S = 6, 12, 24) plus RUNTIME_MARGIN, and each replica runs with the
flags that plan prints, its KV pool capped at S sequences (--max-batch-memory).
stories260K's KV is 640 B a token: the search's whole MiB is ~6 sequences, and a
MiB of runtime measured differently at start (serve measures its runtime base a
few MiB above plan's, hence the margin) would move a pool by as much; the cap
keeps each replica's capacity the plan's S.
The same burst is sent through two routers (pool_router.py): the Gateway API
Inference Extension's endpoint picker as deploy/kubernetes/overlays/
inference-gateway configures it (50 ms scrapes of the model-server-protocol
metrics, the utilization-detector filter, the KV-utilization score), and
round-robin. The burst: clients start RAMP_S apart and each sends OpenAI
/v1/completions requests (N tokens, ignore_eos, streamed) back to back until
RUN_S after the last one started, pausing BACKOFF_S after a 429; a stream still
going then, or still queued without an answer, is abandoned: the client closes
and the server cancels it. Abandoned streams count with their status (200),
unanswered ones not at all (a 429 is answered at once, at admission).
The clients are LOAD_SHARE of what the three replicas admit together (their /info
max_queued_tokens over P + N), more than three times what the smallest admits:
an even split overflows it.
Each replica's CPU share is proportional to its size, as a pod's CPU request (and
so its cgroup CPU weight) usually is: the replicas share the machine's cores, and
`nice` levels give weights of about 1 : 2 : 4 (nice 6, 3, 0; each level is a factor
1.25). Without them the three replicas ran at the same speed whatever their size,
and whether round-robin overflowed the smallest came down to the machine (CI stop
27: a faster one kept up and round-robin had no 429, so nothing was compared).

Owns: every answer is 200 or 429; with the picker no replica answers 429 while
another has room (room: the requests this test has in flight there, plus one,
fit its admission bound), and its 429 share is lower than round-robin's, which
has some. Figures go to $PLIMSOLL_POOL_REPORT (default /tmp/plimsoll-pool.json).
Also: `plimsoll plan --requests-per-second` prints the pool's replicas and HPA bounds."""

import json
import math
import os
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.request

from pool_router import PickerRouter, RoundRobinRouter
from server import BINARY, STORIES, Server

PROMPT_TOKENS = 16  # P: the plan's --prompt-tokens (prompts below are shorter)
NEW_TOKENS = 240    # N
SEQUENCES = (6, 12, 24)  # per replica: the KV pool of each memory limit
LOAD_SHARE = 0.65   # clients / requests the pool admits (the picker's filter is at 0.8)
RAMP_S = 0.05
RUN_S = float(os.environ.get("PLIMSOLL_POOL_RUN_S", "5"))
BACKOFF_S = 0.1
ABANDON_AFTER_S = 0.5  # after the burst's end, unanswered requests are closed
REPORT = os.environ.get("PLIMSOLL_POOL_REPORT", "/tmp/plimsoll-pool.json")
COMMON = ["--threads", "1", "--max-concurrent-requests", "256"]
RUNTIME_MARGIN_BYTES = 16 << 20


def nice_for(sequences):
    """The nice level whose CPU weight, relative to nice 0, is sequences / max(SEQUENCES)."""
    return round(math.log(max(SEQUENCES) / sequences) / math.log(1.25))


def plan_for(sequences):
    """`plimsoll plan --target-concurrency` as JSON: the limit and the serve flags."""
    out = subprocess.run([BINARY, "plan", "--model", STORIES, "--prompt-tokens", str(PROMPT_TOKENS),
                          "--max-new-tokens", str(NEW_TOKENS), "--target-concurrency", str(sequences), "--json"]
                         + COMMON, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


class Burst:
    """CLIENTS closed-loop clients through `router`; per answer: (replica, status, 429 while another had room)."""

    def __init__(self, router, replicas, clients):
        self.router, self.replicas, self.clients = router, replicas, clients
        self.capacity = {r.url: r.admits for r in replicas}
        self.in_flight = {r.url: 0 for r in replicas}
        self.peak = {r.url: 0 for r in replicas}
        self.lock = threading.Lock()
        self.answers = []  # (url, status, other replicas with room at a 429)
        self.errors = []
        self.abandoned = 0  # streaming or still queued when the burst ended

    def _send(self, url, body, deadline):
        """(status, read to the end): a stream still going at `deadline` is abandoned."""
        req = urllib.request.Request(url + "/v1/completions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=max(0.5, deadline - time.time())) as r:
                while r.read1(65536):
                    if time.time() > deadline:
                        return r.status, False
                return r.status, True
        except urllib.error.HTTPError as e:
            e.read()
            return e.code, True

    def _client(self, index, start, stop):
        time.sleep(max(0.0, start - time.time()))
        n = 0
        while time.time() < stop:
            url = self.router.pick()
            with self.lock:
                self.in_flight[url] += 1
                self.peak[url] = max(self.peak[url], self.in_flight[url])
            body = json.dumps({"model": "stories", "prompt": "Tim %d %d" % (index, n),
                               "max_tokens": NEW_TOKENS, "ignore_eos": True, "stream": True}).encode()
            n += 1
            try:
                status, complete = self._send(url, body, stop + ABANDON_AFTER_S)
            except OSError as e:  # a timeout at the deadline: queued, no header yet (a 429 comes at once)
                status, complete = None, False
                if time.time() < stop + ABANDON_AFTER_S - 0.05:
                    self.errors.append("%s: %s" % (url, e))
            with self.lock:
                self.in_flight[url] -= 1
                self.abandoned += 0 if complete else 1
                if status is None:
                    continue
                roomy = [u for u in self.in_flight if u != url and self.in_flight[u] + 1 <= self.capacity[u]]
                self.answers.append((url, status, roomy if status == 429 else []))
            if status == 429:
                time.sleep(BACKOFF_S)

    def run(self):
        t0 = time.time() + 0.1
        threads = [threading.Thread(target=self._client, args=(i, t0 + i * RAMP_S, t0 + RAMP_S * self.clients + RUN_S))
                   for i in range(self.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self

    def figures(self):
        total = len(self.answers)
        rejected = [a for a in self.answers if a[1] == 429]
        per = {}
        for r in self.replicas:
            mine = [a for a in self.answers if a[0] == r.url]
            per[r.name] = {"requests": len(mine), "429": sum(1 for a in mine if a[1] == 429),
                           "admits": r.admits, "peak_in_flight": self.peak[r.url]}
        routing = {}
        if getattr(self.router, "picks", 0):
            ages = sorted(self.router.oldest_view_s)
            routing = {"picks": self.router.picks, "fail_open_picks": self.router.fail_open_picks,
                       "oldest_scrape_ms_p50": round(1000 * ages[len(ages) // 2]),
                       "oldest_scrape_ms_p99": round(1000 * ages[int(len(ages) * 0.99)])}
        return {"requests": total, "abandoned_at_end": self.abandoned, "429": len(rejected), "routing": routing, "share_429": len(rejected) / total if total else 0.0,
                "429_while_another_had_room": sum(1 for a in rejected if a[2]), "seconds": self.seconds,
                "statuses": sorted({a[1] for a in self.answers}, key=str), "replicas": per}


class InferencePoolTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.replicas = []
        for s in SEQUENCES:
            plan = plan_for(s)
            flags = list(plan["serve_flags"])
            limit = plan["inputs"]["memory_limit_bytes"] + RUNTIME_MARGIN_BYTES
            flags[flags.index("--memory-limit") + 1] = str(limit)
            block = plan["inputs"]["block_size"]
            sequence_bytes = -(-(PROMPT_TOKENS + NEW_TOKENS) // block) * block * plan["model"]["kv_bytes_per_token"]
            flags += ["--max-batch-memory", str(s * sequence_bytes)]
            nice = nice_for(s)
            server = Server(*flags, nice=nice)
            server.name = "%d sequences, %d MiB, nice %d" % (s, limit >> 20, nice)
            server.limit_bytes = limit
            info = server.get("/info")
            info = json.loads(info[1])
            server.admits = min(info["max_queued_tokens"] // (PROMPT_TOKENS + NEW_TOKENS),
                                info["max_concurrent_requests"])
            cls.replicas.append(server)

    @classmethod
    def tearDownClass(cls):
        for r in cls.replicas:
            r.stop()

    def wait_idle(self):
        for r in self.replicas:
            m = r.metrics_when(lambda m: m.get("plimsoll_num_requests_waiting") == 0 and
                               m.get("plimsoll_num_requests_running") == 0 and
                               m.get("plimsoll_kv_cache_usage_perc") == 0, timeout_s=60)
            self.assertEqual(m.get("plimsoll_kv_cache_usage_perc"), 0, r.name)

    def burst(self, router_class, clients):
        t0 = time.time()
        self.wait_idle()
        t1 = time.time()
        router = router_class([r.url for r in self.replicas])
        try:
            burst = Burst(router, self.replicas, clients).run()
        finally:
            router.close()
        burst.seconds = {"drain_before": round(t1 - t0, 1), "burst": round(time.time() - t1, 1)}
        return burst

    def test_picker_routes_by_memory_where_round_robin_overflows_the_small_replica(self):
        admits = [r.admits for r in self.replicas]
        self.assertEqual(admits, sorted(admits), "the limits must order the replicas' capacity")
        self.assertGreater(admits[0], 0)
        clients = int(LOAD_SHARE * sum(admits))
        self.assertGreater(clients, 3 * admits[0], "an even split must overflow the smallest replica")
        picker = self.burst(PickerRouter, clients)
        robin = self.burst(RoundRobinRouter, clients)
        report = {"clients": clients, "run_s": RUN_S, "ramp_s": RAMP_S, "new_tokens": NEW_TOKENS,
                  "replicas": [{"name": r.name, "memory_limit_bytes": r.limit_bytes, "admits": r.admits}
                               for r in self.replicas],
                  "picker": picker.figures(), "round_robin": robin.figures()}
        with open(REPORT, "w") as f:
            json.dump(report, f, indent=2)
        print(json.dumps(report, indent=2))
        for burst in (picker, robin):
            self.assertEqual(burst.errors, [])
            self.assertEqual(set(burst.figures()["statuses"]) - {200, 429}, set())
        p, r = report["picker"], report["round_robin"]
        self.assertGreater(r["429"], 0, "round-robin overflowed no replica: the burst is too small")
        self.assertEqual(p["429_while_another_had_room"], 0)
        self.assertLess(p["share_429"], r["share_429"])
        self.wait_idle()  # every admitted request ended; admission is empty again


class PoolPlanTest(unittest.TestCase):
    """`plimsoll plan` sizes the pool for a target load from the same plan (docs/planner.md)."""

    def plan(self, *extra):
        return subprocess.run([BINARY, "plan", "--model", STORIES, "--memory-limit", "256Mi", "--prompt-tokens",
                               str(PROMPT_TOKENS), "--max-new-tokens", str(NEW_TOKENS)] + COMMON + list(extra),
                              capture_output=True, text=True)

    def test_replicas_and_hpa_bounds_for_a_target_load(self):
        out = self.plan("--requests-per-second", "40", "--request-seconds", "3", "--peak-requests-per-second", "100",
                        "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        j = json.loads(out.stdout)
        pool, plan = j["pool"], j["plan"]
        per = min(plan["max_concurrent_sequences"], j["inputs"]["max_batch_size"], j["inputs"]["max_concurrent_requests"])
        self.assertEqual(pool["sequences_per_replica"], per)
        self.assertEqual(pool["sequences_in_flight"], 120)
        self.assertEqual(pool["replicas"], -(-120 // per))
        self.assertEqual(pool["hpa"]["min_replicas"], max(2, pool["replicas"]))
        self.assertEqual(pool["hpa"]["max_replicas"], max(pool["hpa"]["min_replicas"], -(-300 // per)))
        hpa = j["kubernetes"]["hpa"]["spec"]
        self.assertEqual((hpa["minReplicas"], hpa["maxReplicas"]), (pool["hpa"]["min_replicas"], pool["hpa"]["max_replicas"]))
        text = self.plan("--requests-per-second", "40", "--request-seconds", "3").stdout
        self.assertIn("pool (inference gateway):", text)
        self.assertIn("minReplicas: %d\n" % pool["hpa"]["min_replicas"], text)

    def test_a_load_without_its_seconds_names_the_flag(self):
        out = self.plan("--requests-per-second", "40")
        self.assertEqual(out.returncode, 1)
        self.assertIn("--request-seconds", out.stderr)


if __name__ == "__main__":
    unittest.main()
