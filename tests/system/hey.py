"""Runs Debian's `hey` load generator with per-request CSV output (`-o csv`)
and summarises it: status counts, latency percentiles, connect times. hey
writes a CSV row only for requests that got an HTTP answer, so rows < n
means connection errors or client time-outs."""

import csv
import io
import shutil
import subprocess


def available():
    return shutil.which("hey") is not None


def run(url, body, n, c, timeout_s=1800, request_timeout_s=20):
    """hey -c C -n N -m POST -H 'Content-Type: application/json' -d BODY URL, as CSV rows."""
    cmd = ["hey", "-c", str(c), "-n", str(n), "-t", str(request_timeout_s), "-o", "csv", "-m", "POST",
           "-H", "Content-Type: application/json", "-d", body, url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if p.returncode != 0:
        raise RuntimeError("hey failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
    return parse_csv(p.stdout)


def parse_csv(text):
    rows = []
    for row in csv.DictReader(io.StringIO(text)):
        rows.append({"seconds": float(row["response-time"]), "connect": float(row["DNS+dialup"]),
                     "status": int(row["status-code"]), "offset": float(row["offset"])})
    return rows


def percentile(values, q):
    """Nearest-rank percentile (q in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, int(round(q / 100.0 * len(ordered) + 0.5 - 1e-9)))
    return ordered[min(rank, len(ordered)) - 1]


def summarise(rows, n):
    statuses = {}
    for r in rows:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    ok = [r["seconds"] for r in rows if r["status"] == 200]
    every = [r["seconds"] for r in rows]
    return {
        "requests": n,
        "answered": len(rows),
        "statuses": statuses,
        "share_429": statuses.get(429, 0) / float(max(1, len(rows))),
        "p50_s": percentile(every, 50) if every else None,
        "p99_s": percentile(every, 99) if every else None,
        "p50_200_s": percentile(ok, 50) if ok else None,
        "p99_200_s": percentile(ok, 99) if ok else None,
        "max_connect_s": max((r["connect"] for r in rows), default=None),
        "wall_s": max((r["offset"] + r["seconds"] for r in rows), default=0.0),
    }
