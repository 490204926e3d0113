"""The routers of test_inference_pool: the Gateway API Inference Extension's
endpoint picker as the overlay configures it, and round-robin.

PickerRouter applies the picker's documented scoring (the extension at v1.5.0,
pkg/epp/framework/plugins/...) with deploy/kubernetes/overlays/inference-gateway/
epp-config.yaml's parameters, which it reads from that file:
- each pod's /metrics is scraped every 50 ms (the EPP's --refresh-metrics-interval)
  by its own thread, into WaitingQueueSize, RunningRequestsSize and
  KVCacheUsagePercent through the `plimsoll` engine config's specs; the scraping
  threads live in a process of their own, as the EPP is one, sharing the views
  through shared memory: in the test's process they waited for the interpreter
  lock behind 100+ streaming clients, and on a loaded 2-core machine every view
  went seconds stale at once (the picker then fails open on old figures);
- utilization-detector as a filter: a pod stays a candidate when its metrics are
  fresher than metricsStalenessThreshold and waiting < queueDepthThreshold and
  KV usage < kvCacheUtilThreshold (headroom 0); none left: every pod (fail-open);
- queue-scorer: (max waiting - waiting) / (max - min) over the candidates, 1 when
  all are equal; kv-cache-utilization-scorer: 1 - KV usage; summed with their weights;
- max-score-picker: the highest total, ties broken at random.
The product relies on the real picker; this exists only in the test."""

import itertools
import multiprocessing
import os
import random
import re
import threading
import time
import urllib.request

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EPP_CONFIG = os.path.join(REPO, "deploy", "kubernetes", "overlays", "inference-gateway", "epp-config.yaml")
REFRESH_S = 0.05  # the EPP's --refresh-metrics-interval (epp-deployment.yaml)


def picker_config(path=EPP_CONFIG):
    """(metric names by field, filter parameters, scorer weights) from the overlay's EndpointPickerConfig."""
    with open(path) as f:
        cfg = yaml.safe_load(f)
    plugins = {p.get("name", p["type"]): p for p in cfg["plugins"]}
    extractor = next(p for p in cfg["plugins"] if p["type"] == "core-metrics-extractor")["parameters"]
    engine = next(e for e in extractor["engineConfigs"] if e["name"] == extractor["defaultEngine"])
    names = {"waiting": engine["queuedRequestsSpec"], "running": engine["runningRequestsSpec"],
             "kv": engine["kvUsageSpec"]}
    profile = cfg["schedulingProfiles"][0]["plugins"]
    detector = next(plugins[p["pluginRef"]] for p in profile if plugins[p["pluginRef"]]["type"] == "utilization-detector")
    params = detector.get("parameters", {})
    staleness = params.get("metricsStalenessThreshold", "200ms")
    filt = {"queue": params.get("queueDepthThreshold", 5), "kv": params.get("kvCacheUtilThreshold", 0.8),
            "stale_s": float(staleness[:-2]) / 1000 if staleness.endswith("ms") else float(staleness[:-1])}
    weights = {plugins[p["pluginRef"]]["type"]: p.get("weight", 1) for p in profile
               if plugins[p["pluginRef"]]["type"].endswith("-scorer")}
    return names, filt, weights


def scrape(url, names):
    """{field: value} of the named gauges on url/metrics."""
    text = urllib.request.urlopen(url + "/metrics", timeout=2).read().decode()
    out = {}
    for field, name in names.items():
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        out[field] = float(m.group(1)) if m else None
    return out


FIELDS = ("waiting", "running", "kv")


def _scrape_loop(url, names, slot, stop_event):
    """Writes (scraped at, waiting, running, kv) of url into `slot` every REFRESH_S."""
    while not stop_event.is_set():
        started = time.time()
        try:
            m = scrape(url, names)
            with slot.get_lock():
                slot[:] = [time.time()] + [m[f] if m[f] is not None else float("nan") for f in FIELDS]
        except OSError:
            pass  # stale until the next scrape answers
        stop_event.wait(max(0.0, REFRESH_S - (time.time() - started)))


def _scraper_process(urls, names, slots, stop_event):
    threads = [threading.Thread(target=_scrape_loop, args=(u, names, slot, stop_event), daemon=True)
               for u, slot in zip(urls, slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class PickerRouter:
    name = "endpoint picker"

    def __init__(self, urls):
        self.urls = list(urls)
        self.names, self.filter, self.weights = picker_config()
        unknown = set(self.weights) - {"queue-scorer", "kv-cache-utilization-scorer"}
        if unknown:
            raise RuntimeError("the overlay uses scorers this router does not implement: %s" % sorted(unknown))
        self.picks = 0
        self.fail_open_picks = 0  # every pod filtered out: picked among all
        self.oldest_view_s = []   # per pick: the age of the oldest scrape it used
        ctx = multiprocessing.get_context("spawn")
        self.slots = [ctx.Array("d", [0.0] * (1 + len(FIELDS))) for _ in self.urls]  # scraped at 0: none yet
        self.stop_event = ctx.Event()
        self.process = ctx.Process(target=_scraper_process, args=(self.urls, self.names, self.slots, self.stop_event),
                                   daemon=True)
        self.process.start()
        deadline = time.time() + 10
        while any(v is None for v in self._views().values()) and time.time() < deadline:
            time.sleep(0.01)

    def _views(self):
        """url -> (scraped at, {waiting, running, kv}), or None before the first scrape."""
        views = {}
        for u, slot in zip(self.urls, self.slots):
            with slot.get_lock():
                row = list(slot)
            views[u] = (row[0], dict(zip(FIELDS, row[1:]))) if row[0] else None
        return views

    def pick(self):
        now = time.time()
        view = self._views()
        fresh = {u: v[1] for u, v in view.items() if v and now - v[0] <= self.filter["stale_s"]}
        candidates = [u for u, m in fresh.items()
                      if m["waiting"] < self.filter["queue"] and m["kv"] < self.filter["kv"]]
        self.picks += 1
        self.oldest_view_s.append(max(now - v[0] for v in view.values() if v))
        if not candidates:  # fail-open: every pod, scored on what is known
            self.fail_open_picks += 1
            candidates = [u for u in self.urls if view[u]]
        metrics = {u: view[u][1] for u in candidates}
        waiting = [metrics[u]["waiting"] for u in candidates]
        lo, hi = min(waiting), max(waiting)
        scores = {}
        for u in candidates:
            queue = 1.0 if hi == lo else (hi - metrics[u]["waiting"]) / (hi - lo)
            scores[u] = (self.weights.get("queue-scorer", 0) * queue +
                         self.weights.get("kv-cache-utilization-scorer", 0) * (1 - metrics[u]["kv"]))
        best = max(scores.values())
        return random.choice([u for u in candidates if scores[u] == best])

    def close(self):
        self.stop_event.set()
        self.process.join(timeout=10)


class RoundRobinRouter:
    name = "round-robin"

    def __init__(self, urls):
        self.cycle = itertools.cycle(list(urls))
        self.lock = threading.Lock()

    def pick(self):
        with self.lock:
            return next(self.cycle)

    def close(self):
        pass
