"""The routers of test_inference_pool: the Gateway API Inference Extension's
endpoint picker as the overlay configures it, and round-robin.

PickerRouter applies the picker's documented scoring (the extension at v1.5.0,
pkg/epp/framework/plugins/...) with deploy/kubernetes/overlays/inference-gateway/
epp-config.yaml's parameters, which it reads from that file:
- each pod's /metrics is scraped every 50 ms (the EPP's --refresh-metrics-interval)
  by its own thread, into WaitingQueueSize, RunningRequestsSize and
  KVCacheUsagePercent through the `plimsoll` engine config's specs;
- utilization-detector as a filter: a pod stays a candidate when its metrics are
  fresher than metricsStalenessThreshold and waiting < queueDepthThreshold and
  KV usage < kvCacheUtilThreshold (headroom 0); none left: every pod (fail-open);
- queue-scorer: (max waiting - waiting) / (max - min) over the candidates, 1 when
  all are equal; kv-cache-utilization-scorer: 1 - KV usage; summed with their weights;
- max-score-picker: the highest total, ties broken at random.
The product relies on the real picker; this exists only in the test."""

import itertools
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
    cfg = yaml.safe_load(open(path))
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


class PickerRouter:
    name = "endpoint picker"

    def __init__(self, urls):
        self.urls = list(urls)
        self.names, self.filter, self.weights = picker_config()
        unknown = set(self.weights) - {"queue-scorer", "kv-cache-utilization-scorer"}
        if unknown:
            raise RuntimeError("the overlay uses scorers this router does not implement: %s" % sorted(unknown))
        self.view = {u: None for u in self.urls}  # url -> (scraped at, {waiting, running, kv})
        self.picks = 0
        self.fail_open_picks = 0  # every pod filtered out: picked among all
        self.oldest_view_s = []   # per pick: the age of the oldest scrape it used
        self.lock = threading.Lock()
        self.stop_event = threading.Event()
        self.threads = [threading.Thread(target=self._scrape_loop, args=(u,), daemon=True) for u in self.urls]
        for t in self.threads:
            t.start()
        deadline = time.time() + 10
        while any(v is None for v in self.view.values()) and time.time() < deadline:
            time.sleep(0.01)

    def _scrape_loop(self, url):
        while not self.stop_event.is_set():
            started = time.time()
            try:
                m = scrape(url, self.names)
                with self.lock:
                    self.view[url] = (time.time(), m)
            except OSError:
                pass  # stale until the next scrape answers
            self.stop_event.wait(max(0.0, REFRESH_S - (time.time() - started)))

    def pick(self):
        now = time.time()
        with self.lock:
            view = dict(self.view)
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
        for t in self.threads:
            t.join()


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
