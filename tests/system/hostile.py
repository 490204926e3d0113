"""Tools for the hostile-traffic suite (test_hostile.py): `plimsoll serve` on
stories260K inside a real memory cgroup whose limit the server finds by itself,
raw exchanges that stop sending as soon as the server refuses, connections
that trickle bytes, and the invariants every case asserts afterwards.

Every client here talks only to 127.0.0.1 and is bounded in count and time."""

import collections
import gzip
import itertools
import json
import os
import re
import select
import signal
import socket
import struct
import threading
import time

import memcg
import rawhttp
from server import STORIES_DIR, Server

MIB = 1 << 20
LIMIT_BYTES = int(os.environ.get("PLIMSOLL_HOSTILE_LIMIT_MIB", "512")) * MIB
MODEL_DIR = STORIES_DIR
MODEL = os.path.join(MODEL_DIR, "stories260K.bin")
TOKENIZER = os.path.join(MODEL_DIR, "tok512.bin")
OK_BODY = {"inputs": "Once upon a time", "parameters": {"max_new_tokens": 4}}
REPORT_PATH = os.environ.get("PLIMSOLL_HOSTILE_REPORT", "/tmp/plimsoll-hostile.json")
HEALTH_DEADLINE_S = 5.0     # /health must answer within this while under attack
GENERATE_DEADLINE_S = 30.0  # a small /generate must be served (200) within this after a case


def skip_reason():
    for path in (MODEL, TOKENIZER):
        if not os.path.exists(path):
            return "missing %s" % path
    return memcg.unavailable_reason()


# ---------------------------------------------------------------- raw exchanges

class Answer:
    """What one raw exchange got. outcome: answered | closed-while-sending (the
    server closed or reset before it took the whole request: a refusal) |
    closed (no answer after the whole request) | timeout | connect-failed."""

    def __init__(self, outcome, status=None, headers=None, body=b"", sent_bytes=0, seconds=0.0, error=None,
                 whole_sent=False):
        self.outcome, self.status, self.headers, self.body = outcome, status, headers or {}, body
        self.sent_bytes, self.seconds, self.error = sent_bytes, seconds, error
        self.whole_sent = whole_sent  # the client sent every byte it meant to

    def key(self):
        return str(self.status) if self.outcome == "answered" else self.outcome

    def describe(self):
        text = self.key()
        if self.outcome == "answered" and self.status != 200:
            text += " %s" % self.body[:160].decode("utf-8", "replace")
        return "%s (%.1f MiB sent, %.1f s)" % (text, self.sent_bytes / MIB, self.seconds)


def _final(data):
    """data without the interim (1xx) responses before the final one."""
    while data.startswith(b"HTTP/1.1 1") and b"\r\n\r\n" in data:
        data = data.partition(b"\r\n\r\n")[2]
    return data


def _head_complete(data):
    """(status, headers, body) once the response is complete, else None."""
    data = _final(data)
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return None
    r = rawhttp.parse_response(data)
    if r.headers.get("transfer-encoding", "").lower() == "chunked":
        return (r.status, r.headers, r.body) if body.endswith(b"0\r\n\r\n") else None
    if "content-length" in r.headers:
        return (r.status, r.headers, r.body) if len(body) >= int(r.headers["content-length"]) else None
    return None  # read to the close


def _decoded(r):
    """The body as sent before a Content-Encoding the client accepted (gzip)."""
    if r.headers.get("content-encoding", "").lower() == "gzip":
        try:
            return gzip.decompress(r.body)
        except (OSError, EOFError):
            pass
    return r.body


def _pieces(body, chunk_bytes):
    if isinstance(body, (bytes, bytearray)):
        for i in range(0, len(body), chunk_bytes):
            yield bytes(body[i:i + chunk_bytes])
    else:
        yield from body


def exchange(port, head, body=b"", timeout_s=60.0, chunk_bytes=256 * 1024, rcvbuf_bytes=None, answer_wait_s=None):
    """Sends head, then body (bytes, or an iterable of byte pieces, which may be
    endless: it is cut by the deadline), and reads the answer. Stops sending as
    soon as the server answers or closes. One deadline for the whole exchange;
    answer_wait_s, when given, bounds the wait for an answer once all was sent."""
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    sent = 0
    data = b""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if rcvbuf_bytes:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
        s.settimeout(min(timeout_s, 10.0))
        s.connect(("127.0.0.1", port))
    except OSError as e:
        s.close()
        return Answer("connect-failed", seconds=time.monotonic() - t0, error=repr(e))
    with s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        ended = None  # None while the server has neither answered nor closed
        whole_request_sent = False
        try:
            stream = itertools.chain([head], _pieces(body, chunk_bytes))
            view = memoryview(b"")
            while ended is None:
                if not view:
                    piece = next(stream, None)
                    if piece is None:
                        whole_request_sent = True
                        break
                    view = memoryview(piece)
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    ended = "timeout"
                    break
                r, w, _ = select.select([s], [s], [], left)
                if r:
                    chunk = s.recv(65536)
                    if not chunk:
                        ended = "closed-while-sending"
                        break
                    data += chunk
                    if _final(data) or not data.endswith(b"\r\n\r\n"):
                        break  # the server answered before it took the whole body: stop sending
                    continue  # only an interim answer (100 Continue): go on
                if w:
                    n = s.send(view[:chunk_bytes])
                    sent += n
                    view = view[n:]
        except (BrokenPipeError, ConnectionResetError) as e:
            ended, error = "closed-while-sending", repr(e)
        else:
            error = None
        if whole_request_sent and answer_wait_s is not None:
            deadline = min(deadline, time.monotonic() + answer_wait_s)
        if ended != "timeout":
            more, read_end = _read_answer(s, deadline, data)
            data = more
            if read_end == "timeout" and not data:
                ended = "timeout"
            elif not data and ended is None:
                ended = "closed" if whole_request_sent else "closed-while-sending"
    seconds = time.monotonic() - t0
    data = _final(data)
    if data and b"\r\n\r\n" in data:
        try:
            r = rawhttp.parse_response(data)
            return Answer("answered", r.status, r.headers, _decoded(r), sent, seconds, whole_sent=whole_request_sent)
        except (ValueError, IndexError) as e:
            return Answer("closed", body=data[:200], sent_bytes=sent, seconds=seconds, error=repr(e),
                          whole_sent=whole_request_sent)
    return Answer(ended or "closed", sent_bytes=sent, seconds=seconds, error=error, whole_sent=whole_request_sent)



def _read_answer(s, deadline, data):
    """Reads until the response is complete, the server closes, or the deadline."""
    while _head_complete(data) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return data, "timeout"
        r, _, _ = select.select([s], [], [], left)
        if not r:
            continue
        try:
            chunk = s.recv(1 << 20)
        except (ConnectionResetError, BlockingIOError):
            return data, "closed"
        if not chunk:
            return data, "closed"
        data += chunk
    return data, "complete"


def head(method, path, content_length=None, extra=(), api_key=None):
    lines = list(extra)
    if api_key is not None:
        lines.append("Authorization: Bearer %s" % api_key)
    return rawhttp.request_head(method, path, content_length, lines)


def post(port, path, body, timeout_s=60.0, api_key=None, extra=()):
    return exchange(port, head("POST", path, len(body), extra, api_key), body, timeout_s)


def parallel(count, fn):
    """Runs fn(i) on count threads at once; returns their results in order."""
    results = [None] * count
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, fn(i))) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def open_unread(port, request, rcvbuf_bytes=4096):
    """A connection that sends request and never reads: with a tiny receive
    buffer the server's writes stall at once."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
    s.settimeout(10.0)
    s.connect(("127.0.0.1", port))
    s.sendall(request)
    return s


def reset_close(s):
    """Closes with a reset, as a crashed or killed client would."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


# ---------------------------------------------------------------- judging answers

def judge(answer, allow_ok=True, allow_close=False, allow_timeout=False):
    """None when the answer is one the guarantee allows, else why not."""
    if answer.outcome == "answered":
        status = answer.status
        if status == 200:
            return None if allow_ok else "200 to a request that must be refused"
        if not (400 <= status < 500 or status == 503):
            return "status %d (only 4xx, 429, 503 may refuse)" % status
        try:
            body = json.loads(answer.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return "status %d without a JSON body: %r" % (status, answer.body[:80])
        if not isinstance(body, dict) or "error" not in body:
            return "status %d body has no `error`: %r" % (status, answer.body[:80])
        if status == 429 and "retry-after" not in answer.headers:
            return "429 without Retry-After"
        return None
    if answer.outcome == "closed-while-sending":
        return None  # refused before the whole request was taken
    if answer.outcome == "closed":
        return None if allow_close else "connection closed without an answer"
    if answer.outcome == "timeout":
        return None if allow_timeout else "no answer within the client's deadline"
    return "%s: %s" % (answer.outcome, answer.error)


def refused_within(answer, cap_bytes):
    """None when the server refused a request that must be refused (an endless
    body, a header flood) before the client sent cap_bytes of it, else why not."""
    if answer.sent_bytes >= cap_bytes:
        return "took %.0f MiB without refusing" % (answer.sent_bytes / MIB)
    if answer.outcome == "timeout":
        if answer.whole_sent:
            return "no answer to the whole request within the deadline"
        return None  # the server stopped reading (the kernel's buffers filled) and did not grow
    return judge(answer, allow_ok=False, allow_close=True)


def tally(answers):
    return dict(collections.Counter(a.key() for a in answers))


# ---------------------------------------------------------------- the server in its cgroup

class ServerInCgroup:
    """One `plimsoll serve` in a fresh memory cgroup; restarted (in a new cgroup)
    when a case killed it or left it busy."""

    def __init__(self, name, *args, api_key=None):
        self.name, self.args, self.api_key = name, list(args), api_key
        self.cg = self.server = None
        self.dirty = False
        self.starts = 0

    @property
    def port(self):
        return self.server.port

    def ensure(self):
        if self.server is None or self.dirty or self.server.proc.poll() is not None:
            self.restart()

    def restart(self):
        self.close()
        self.cg = memcg.MemoryCgroup("plimsoll-hostile-%s" % self.name, LIMIT_BYTES)
        self.cg.start_sampling(0.1)
        extra = ["--api-key", self.api_key] if self.api_key else []
        # No --memory-limit: the server finds the cgroup's limit itself.
        self.server = Server("--tokenizer", TOKENIZER, *(extra + self.args), model=MODEL, cgroup=self.cg)
        self.starts += 1
        self.dirty = False
        if "from cgroup v%d" % self.cg.version not in self.server.output():
            raise AssertionError("the server did not find the cgroup's limit:\n" + self.server.output()[-2000:])
        m = re.search(r"= budget ([0-9.]+) MiB", self.server.output())
        if not m:
            raise AssertionError("the server printed no plan budget:\n" + self.server.output()[-2000:])
        self.budget_bytes = float(m.group(1)) * MIB

    def close(self):
        if self.server:
            self.server.stop(timeout_s=20)
        if self.cg:
            self.cg.close()
        self.server = self.cg = None

    def reset_peak(self):
        self.cg.reset_peak()

    def auth(self):
        return {"Authorization": "Bearer %s" % self.api_key} if self.api_key else {}

    def health_seconds(self, timeout_s=HEALTH_DEADLINE_S):
        """(status or error text, seconds) of one GET /health."""
        t0 = time.monotonic()
        try:
            status = self.server.request("GET", "/health", timeout_s=timeout_s)[0]
        except OSError as e:
            status = "error %s" % type(e).__name__
        return status, time.monotonic() - t0

    def generate_seconds(self, timeout_s):
        """(status or error text, seconds) of one small /generate."""
        t0 = time.monotonic()
        try:
            status, data, _ = self.server.request("POST", "/generate", OK_BODY, self.auth(), timeout_s=timeout_s)
            if status == 200 and not json.loads(data).get("generated_text"):
                status = "200 without text"
        except (OSError, ValueError) as e:
            status = "error %s" % type(e).__name__
        return status, time.monotonic() - t0

    def served_after(self, deadline_s=GENERATE_DEADLINE_S):
        """Polls a small /generate until a 200 (429 and 503 mean: not yet)."""
        end = time.monotonic() + deadline_s
        seen = []
        while True:
            status, seconds = self.generate_seconds(max(1.0, end - time.monotonic()))
            seen.append(status)
            if status == 200 or time.monotonic() >= end or status not in (429, 503):
                return status, seen
            time.sleep(0.5)

    def invariants(self, busy_ok=False):
        """Problems with the server after a case (empty when it is alive, healthy,
        serving, never OOM-killed and below the limit), and the cgroup's numbers.
        busy_ok: the case left legitimate work queued that outlasts the client's
        deadline, so a small /generate may still wait (the server is replaced next)."""
        problems = []
        proc = self.server.proc
        if proc.poll() is None:
            status, seconds = self.health_seconds()
            if status != 200:
                problems.append("/health answered %s after %.1f s" % (status, seconds))
            status, seen = self.served_after(5.0 if busy_ok else GENERATE_DEADLINE_S)
            if status != 200 and not (busy_ok and all(s in (429, 503, "error TimeoutError") for s in seen)):
                problems.append("a small /generate was not served: %s" % seen[-5:])
        if proc.poll() is not None:
            code = proc.returncode
            name = signal.Signals(-code).name if code is not None and code < 0 else "exit %s" % code
            problems.append("the server died (%s)" % name)
        v = self.cg.verdict()
        if v["oom_kills"]:
            problems.append("OOM-killed %d time(s)" % v["oom_kills"])
        if v["peak_bytes"] >= LIMIT_BYTES:
            problems.append("cgroup peak %.1f MiB reached the %.0f MiB limit" % (v["peak_bytes"] / MIB, LIMIT_BYTES / MIB))
        elif v["peak_bytes"] > self.budget_bytes:
            # Below the limit, but past what the plan holds: the plan missed something.
            problems.append("cgroup peak %.1f MiB is past the plan's budget %.1f MiB" % (
                v["peak_bytes"] / MIB, self.budget_bytes / MIB))
        return problems, v


def cgroup_text(v):
    return "cgroup peak %.1f MiB of %.0f MiB, oom_kill %d, failcnt %d" % (
        v["peak_bytes"] / MIB, LIMIT_BYTES / MIB, v["oom_kills"], v["failcnt"])


class Report:
    """Per-case results, appended to REPORT_PATH (JSON lines) for docs/reliability.md."""

    @staticmethod
    def add(case, ok, answers, verdict, seconds, problems):
        row = {"case": case, "ok": ok, "answers": answers, "peak_mib": round(verdict["peak_bytes"] / MIB, 1),
               "limit_mib": LIMIT_BYTES // MIB, "oom_kills": verdict["oom_kills"], "seconds": round(seconds, 1),
               "problems": problems}
        with open(REPORT_PATH, "a") as f:
            f.write(json.dumps(row) + "\n")


# ---------------------------------------------------------------- trickling connections

class Tricklers:
    """count connections that each send `payload` one byte every interval_s
    (slow heads, slow bodies), or nothing at all (idle connections), from one
    thread. The server may answer or close any of them: that is counted."""

    def __init__(self, port, count, payload=b"", interval_s=2.0, rcvbuf_bytes=None, prefix=b""):
        self.port, self.payload, self.interval_s = port, payload, interval_s
        self.socks, self.offsets = [], []
        self.connect_failures = 0
        self.closed_by_server = 0
        self.answers = collections.Counter()
        self._stop = threading.Event()
        self._thread = None
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                if rcvbuf_bytes:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf_bytes)
                s.settimeout(5.0)
                s.connect(("127.0.0.1", port))
                if prefix:
                    s.sendall(prefix)
                s.setblocking(False)
                self.socks.append(s)
                self.offsets.append(0)
            except OSError:
                s.close()
                self.connect_failures += 1

    def start(self):
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            for i, s in enumerate(self.socks):
                if s is None:
                    continue
                self._poll(i, s)
                if self.socks[i] is not None and self.offsets[i] < len(self.payload):
                    try:
                        s.send(self.payload[self.offsets[i]:self.offsets[i] + 1])
                        self.offsets[i] += 1
                    except (BlockingIOError, InterruptedError):
                        pass
                    except OSError:
                        self._drop(i)
            self._stop.wait(self.interval_s)

    def _poll(self, i, s):
        try:
            data = s.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self._drop(i)
        if not data:
            return self._drop(i)
        if data.startswith(b"HTTP/1."):
            self.answers[data.split(b" ", 2)[1].decode("latin-1")] += 1

    def _drop(self, i):
        self.closed_by_server += 1
        self.socks[i].close()
        self.socks[i] = None

    def open_count(self):
        return sum(1 for s in self.socks if s is not None)

    def close(self):
        self._stop.set()
        if self._thread:
            self._thread.join()
        for s in self.socks:
            if s is not None:
                reset_close(s)
        self.socks = []

    def summary(self):
        return "%d opened (%d failed to connect), %d closed by the server, answers %s" % (
            len(self.offsets), self.connect_failures, self.closed_by_server, dict(self.answers))
