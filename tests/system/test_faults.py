"""Faults against the real `plimsoll serve`: clients that vanish mid-stream
(their KV blocks return: plimsoll_kv_blocks_used goes back to 0 and the
requests count as cancelled, not served); SIGTERM under load (in-flight
requests finish, or end with a clean JSON error when the grace period is
too short; the process exits 0 within the grace period); a request needing
more KV than the whole pool of a small --memory-limit (422 at once, with the
numbers, while other requests keep moving); a burst far beyond the queue
bound (429s with Retry-After, then normal service)."""

import json
import signal
import threading
import time
import unittest
import urllib.error
import urllib.request

import rawhttp
from server import Server

PROMPT = "Once upon a time"


def post(url, body, timeout_s=120):
    """(status, parsed body or raw bytes, headers) — never raises for HTTP errors."""
    req = urllib.request.Request(url + "/generate", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        data = e.read()
        try:
            return e.code, json.loads(data), dict(e.headers)
        except ValueError:
            return e.code, data, dict(e.headers)


def run_concurrently(fn, n):
    results = [None] * n

    def worker(i):
        try:
            results[i] = fn(i)
        except Exception as e:  # noqa: BLE001 - every outcome is asserted by the caller
            results[i] = e
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, results


class DisconnectTest(unittest.TestCase):
    def test_clients_dropping_mid_stream_return_their_kv_blocks(self):
        # One engine thread keeps 32 long streams running long enough to drop them mid-way.
        server = Server("--memory-limit", "512Mi", "--threads", "1")
        try:
            limits = json.loads(server.get("/info")[1])
            max_new = limits["max_total_tokens"] - 16
            before = server.metrics()
            streams = [rawhttp.Stream(server.port, {"inputs": PROMPT, "parameters": {"max_new_tokens": max_new}})
                       for _ in range(32)]
            for s in streams:
                self.assertEqual(s.status, 200)
                first = s.next_event()
                self.assertIsNone(first["generated_text"], "a stream ended before it was dropped")
            # The gauge is refreshed after the step that sent these first events.
            used = server.metrics_when(lambda m: m["plimsoll_kv_blocks_used"] > 0)["plimsoll_kv_blocks_used"]
            self.assertGreater(used, 0)
            for s in streams:
                s.close()
            t0 = time.time()
            drained = rawhttp.wait_until(lambda: server.metrics()["plimsoll_kv_blocks_used"] == 0, 15)
            self.assertTrue(drained, "KV blocks still used 15 s after every client left: %s"
                            % server.metrics()["plimsoll_kv_blocks_used"])
            print("%d KV blocks held by 32 streams returned %.2f s after the clients vanished"
                  % (used, time.time() - t0))
            cancelled = 'tgi_request_failure{err="cancelled"}'
            # A dropped request is counted when its handler ends, which may follow its blocks' return.
            after = server.metrics_when(lambda m: m.get(cancelled, 0) - before.get(cancelled, 0) >= 32)
            self.assertEqual(after.get(cancelled, 0) - before.get(cancelled, 0), 32)
            self.assertEqual(after["tgi_request_success"] - before.get("tgi_request_success", 0), 0)
            status, body, _ = post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": 8}})
            self.assertEqual(status, 200, body)
        finally:
            self.assertEqual(server.stop(), 0)


class SigtermTest(unittest.TestCase):
    """16 streams and 8 /generate calls in flight, then SIGTERM."""

    def _terminate_under_load(self, grace_s, max_new, n_streams=16, n_generate=8):
        server = Server("--memory-limit", "512Mi", "--threads", "1", "--graceful-timeout", str(grace_s))
        before = server.metrics().get("tgi_request_count", 0)
        started = threading.Semaphore(0)

        def one(i):
            if i >= n_generate:
                s = rawhttp.Stream(server.port, {"inputs": PROMPT, "parameters": {"max_new_tokens": max_new}},
                                   timeout_s=120)
                if s.status != 200:
                    started.release()
                    return ("stream", s.status, None)
                s.next_event()
                started.release()  # in flight: its first token arrived, not its last
                last = s.read_to_end()
                return ("stream", s.status, last, "%d events" % len(s.events))
            return ("generate",) + post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": max_new}})[:2]
        threads, results = run_concurrently(one, n_generate + n_streams)
        for _ in range(n_streams):
            self.assertTrue(started.acquire(timeout=30), "a stream never started")
        self.assertTrue(rawhttp.wait_until(
            lambda: server.metrics().get("tgi_request_count", 0) - before >= n_generate + n_streams, 10))
        t0 = time.time()
        server.proc.send_signal(signal.SIGTERM)
        # A request arriving during the drain is refused cleanly (or finds the port closed).
        late = None
        rawhttp.wait_until(lambda: "received SIGTERM" in server.output(), 5, interval_s=0.01)
        try:
            late = post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": 4}}, timeout_s=30)
        except OSError:
            pass
        code = server.proc.wait(grace_s + 30)
        exit_s = time.time() - t0
        for t in threads:
            t.join(60)
        output = server.output()
        server.stop()
        return code, exit_s, results, late, output

    def test_sigterm_lets_in_flight_requests_finish_and_exits_0(self):
        code, exit_s, results, late, output = self._terminate_under_load(grace_s=60, max_new=200)
        print("SIGTERM with 24 requests in flight: exit %s after %.2f s" % (code, exit_s))
        self.assertEqual(code, 0, output[-2000:])
        self.assertLess(exit_s, 60)
        for r in results:
            self.assertIsInstance(r, tuple, r)
            self.assertEqual(r[1], 200, r)
            if r[0] == "generate":
                self.assertTrue(r[2]["generated_text"])
            else:
                self.assertIsNotNone(r[2], "stream cut without its last event: %s" % (r,))
                self.assertNotIn("error", r[2])
                self.assertIsNotNone(r[2]["generated_text"])
        if late is not None:
            self.assertEqual(late[0], 503, late)
            self.assertEqual(late[1]["error_type"], "unavailable")

    def _past_grace(self):
        grace_s = 1
        # 48 requests of 480 tokens on one thread: ~2 s of work on an idle machine (24 took ~1.0 s,
        # so all of them could finish inside the grace period and the test would prove nothing).
        code, exit_s, results, late, output = self._terminate_under_load(grace_s=grace_s, max_new=480,
                                                                         n_streams=32, n_generate=16)
        print("SIGTERM, grace %d s, 48 long requests: exit %s after %.2f s; outcomes %s"
              % (grace_s, code, exit_s, [r[:2] + r[3:] if isinstance(r, tuple) else repr(r) for r in results]))
        self.assertEqual(code, 0, output[-2000:])
        self.assertLess(exit_s, grace_s + 5, "the drain outlived its grace period")
        if late is not None:
            self.assertEqual(late[0], 503, late)
        return results

    def test_sigterm_past_the_grace_period_exits_0_in_time_with_clean_errors(self):
        cut, silent = 0, 0
        for r in self._past_grace():
            self.assertIsInstance(r, tuple, r)
            kind, status, body = r[:3]
            if kind == "generate":
                if status == 200:
                    self.assertTrue(body["generated_text"])
                else:
                    cut += 1
                    self.assertIn(status, (500, 503), r)
                    self.assertIsInstance(body, dict, r)
                    self.assertIn(body["error_type"], ("unavailable", "incomplete_generation"))
                    self.assertTrue(body["error"])
            else:
                self.assertEqual(status, 200, r)
                if body is None:
                    silent += 1  # see test_streams_cut_by_shutdown_end_with_an_error_event
                elif "error" in body:
                    cut += 1
                    self.assertTrue(body["error"])
        print("%d requests ended with a clean error, %d streams cut without an error event" % (cut, silent))
        self.assertGreater(cut + silent, 0, "every request finished within 1 s: the test proved nothing")

    def test_streams_cut_by_shutdown_end_with_an_error_event(self):
        # docs/api.md promises that a started stream's failure is its last event: after
        # the drain, StreamPump writes what is queued (the engine's error events) before
        # it ends the stream.
        for r in self._past_grace():
            if r[0] == "stream":
                self.assertIsNotNone(r[2], "stream cut without a final or error event: %s" % (r,))


def server_with_limit(mib):
    """A server started with --memory-limit <mib>Mi, or None when its plan does not fit."""
    try:
        return Server("--memory-limit", "%dMi" % mib)
    except RuntimeError as e:
        if "does not fit the memory budget" not in str(e):
            raise
        return None


def small_pool_server():
    """The smallest --memory-limit (to 1 MiB) the server starts with: its KV pool then
    holds only a few full-length sequences (the runtime part of the plan is measured at
    start-up, so the exact figure varies a little by run). Found in 4 MiB steps, then
    refined: a 4 MiB step alone left up to 6,500 tokens of pool, past the test's bound of
    8 sequences in about 4 runs of 10."""
    for mib in range(120, 320, 4):
        server = server_with_limit(mib)
        if server is None:
            continue
        for finer in range(mib - 3, mib):
            smaller = server_with_limit(finer)
            if smaller is not None:
                server.stop()
                return smaller
        return server
    raise AssertionError("the server did not start with any limit up to 320 MiB")


class NeverFitsTest(unittest.TestCase):
    def test_a_request_larger_than_the_whole_pool_is_422_at_once_while_others_run(self):
        server = small_pool_server()
        try:
            info = json.loads(server.get("/info")[1])
            m = server.metrics()
            pool_tokens = int(m["plimsoll_kv_blocks_capacity"]) * 16
            self.assertLess(pool_tokens, 8 * info["max_total_tokens"], "the pool is not small: %d" % pool_tokens)
            # A running stream holds part of the pool while the big request arrives.
            s = rawhttp.Stream(server.port, {"inputs": PROMPT, "parameters": {"max_new_tokens": 200}})
            s.next_event()
            t0 = time.time()
            status, body, _ = post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": pool_tokens + 1}})
            seconds = time.time() - t0
            print("needs %d tokens, pool %d: %d in %.3f s: %s" % (pool_tokens + 1, pool_tokens, status, seconds, body))
            self.assertEqual(status, 422, body)
            self.assertEqual(body["error_type"], "validation")
            self.assertIn(str(info["max_total_tokens"]), body["error"])
            self.assertIn(str(pool_tokens + 1), body["error"])
            self.assertLess(seconds, 1.0)
            last = s.read_to_end()
            self.assertIsNotNone(last, "the running stream was cut")
            self.assertNotIn("error", last)
            self.assertIsNotNone(last["generated_text"], "the running stream did not finish")
            status, body, _ = post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": 8}})
            self.assertEqual(status, 200, body)
            self.assertTrue(rawhttp.wait_until(lambda: server.metrics()["plimsoll_kv_blocks_used"] == 0, 5))
        finally:
            self.assertEqual(server.stop(), 0)


class BurstTest(unittest.TestCase):
    def test_a_burst_far_beyond_the_queue_gets_429s_then_service_recovers(self):
        server = Server("--memory-limit", "512Mi", "--max-concurrent-requests", "4")
        try:
            threads, results = run_concurrently(
                lambda i: post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": 128}}), 200)
            for t in threads:
                t.join(300)
            # KNOWN ISSUE (docs/reliability.md): Debian's cpp-httplib 0.11.4 listens with a
            # backlog of 5, so some of 200 simultaneous connects may be reset before any
            # HTTP exchange. Those are counted and reported; every answer must be 200 or 429.
            resets = [r for r in results if isinstance(r, ConnectionError)]
            answered = [r for r in results if isinstance(r, tuple)]
            self.assertEqual(len(resets) + len(answered), 200, [r for r in results if r not in answered])
            statuses = [r[0] for r in answered]
            counts = {s: statuses.count(s) for s in set(statuses)}
            print("burst of 200 on a queue of 4: %s, %d connections reset" % (counts, len(resets)))
            self.assertEqual(set(counts) - {200, 429}, set(), counts)
            self.assertGreaterEqual(counts.get(200, 0), 4)
            self.assertGreater(counts.get(429, 0), 100)
            for status, body, headers in answered:
                if status == 429:
                    self.assertEqual(body["error_type"], "overloaded")
                    self.assertGreaterEqual(int(headers["Retry-After"]), 1)
                else:
                    self.assertTrue(body["generated_text"])
            # Recovery: the queue drains and the same server answers normally again.
            self.assertTrue(rawhttp.wait_until(lambda: server.metrics()["plimsoll_kv_blocks_used"] == 0, 30))
            for _ in range(8):
                status, body, _ = post(server.url, {"inputs": PROMPT, "parameters": {"max_new_tokens": 16}})
                self.assertEqual(status, 200, body)
            self.assertEqual(server.get("/health")[0], 200)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
