"""Hostile and broken requests against the real `plimsoll serve`: malformed
JSON, wrong types, negative and absurd parameters, unknown fields (ignored,
as TGI does and docs/api.md says), invalid UTF-8 in the body, an oversized
body (413), thousands of stop sequences, a 10 MB prompt (413 at the default
payload limit; 422 naming the token count, within the memory plan, when the
limit lets it through), a stalled body and a trickling body (the read timeout
must end them while the server keeps serving others). Every refusal is a 4xx
JSON error {"error", "error_type"} that names the problem, and after each one
/health and a normal /generate still answer."""

import json
import os
import threading
import time
import unittest

import rawhttp
from server import Server

OK_BODY = {"inputs": "Once upon a time", "parameters": {"max_new_tokens": 4}}
READ_TIMEOUT_S = 30  # ApiConfig::read_timeout_seconds (--request-read-timeout: head + body in all)


def j(value):
    return json.dumps(value).encode()


def gen(**parameters):
    return j({"inputs": "Once upon a time", "parameters": parameters})


# (name, path, body bytes, status, error_type, words the message must contain)
CASES = [
    ("truncated JSON", "/generate", b'{"inputs": "Hello", "parameters": {', 422, "validation", ["parse error"]),
    ("empty body", "/generate", b"", 422, "validation", ["parse error"]),
    ("trailing garbage", "/generate", b'{"inputs": "Hello"} xyz', 422, "validation", ["parse error"]),
    ("NaN literal", "/generate", b'{"inputs": "Hello", "parameters": {"temperature": NaN}}', 422, "validation",
     ["parse error"]),
    ("deep nesting", "/generate", b"[" * 100000 + b"]" * 100000, 422, "validation", ["deeper than 64"]),
    ("body is a list", "/generate", j([1, 2, 3]), 422, "validation", ["JSON object", "array"]),
    ("inputs missing", "/generate", j({"parameters": {"max_new_tokens": 4}}), 422, "validation", ["`inputs`"]),
    ("inputs is a number", "/generate", j({"inputs": 42}), 422, "validation", ["`inputs`", "integer"]),
    ("inputs empty", "/generate", j({"inputs": ""}), 422, "validation", ["`inputs`", "empty"]),
    ("inputs list with a number", "/generate", j({"inputs": ["a", 1]}), 422, "validation", ["`inputs`", "integer"]),
    ("parameters is a string", "/generate", j({"inputs": "Hi", "parameters": "fast"}), 422, "validation",
     ["`parameters`", "string"]),
    ("max_new_tokens is a string", "/generate", gen(max_new_tokens="ten"), 422, "validation",
     ["`max_new_tokens`", "integer", "string"]),
    ("max_new_tokens is a float", "/generate", gen(max_new_tokens=4.5), 422, "validation", ["`max_new_tokens`"]),
    ("do_sample is a string", "/generate", gen(do_sample="yes"), 422, "validation", ["`do_sample`", "boolean"]),
    ("stop is a string", "/generate", gen(stop="END"), 422, "validation", ["`stop`", "list"]),
    ("stop holds a number", "/generate", gen(stop=["a", 3]), 422, "validation", ["`stop`", "integer"]),
    ("temperature is a list", "/generate", gen(temperature=[1]), 422, "validation", ["`temperature`", "array"]),
    ("max_new_tokens negative", "/generate", gen(max_new_tokens=-1), 422, "validation",
     ["`max_new_tokens`", "positive"]),
    ("max_new_tokens zero", "/generate", gen(max_new_tokens=0), 422, "validation", ["`max_new_tokens`"]),
    ("max_new_tokens 10^12", "/generate", gen(max_new_tokens=10 ** 12), 422, "validation",
     ["`max_new_tokens`", "1000000000000"]),
    ("max_new_tokens 2^64", "/generate", gen(max_new_tokens=2 ** 64), 422, "validation", ["`max_new_tokens`"]),
    ("max_new_tokens 2^63", "/generate", gen(max_new_tokens=2 ** 63), 422, "validation", ["`max_new_tokens`"]),
    ("temperature negative", "/generate", gen(temperature=-1.0), 422, "validation", ["`temperature`"]),
    ("temperature zero", "/generate", gen(temperature=0), 422, "validation", ["`temperature`"]),
    ("temperature 1e308", "/generate", b'{"inputs":"Hi","parameters":{"temperature":1e999}}', 422, "validation",
     []),
    ("top_p 1.5", "/generate", gen(top_p=1.5), 422, "validation", ["`top_p`"]),
    ("top_k zero", "/generate", gen(top_k=0), 422, "validation", ["`top_k`"]),
    ("top_k 2^40", "/generate", gen(top_k=2 ** 40), 422, "validation", ["`top_k`"]),
    ("typical_p negative", "/generate", gen(typical_p=-0.5), 422, "validation", ["`typical_p`"]),
    ("repetition_penalty zero", "/generate", gen(repetition_penalty=0), 422, "validation", ["`repetition_penalty`"]),
    ("frequency_penalty 1e300", "/generate", gen(frequency_penalty=1e300), 422, "validation",
     ["`frequency_penalty`"]),
    ("seed negative", "/generate", gen(seed=-1), 422, "validation", ["`seed`"]),
    ("top_n_tokens 1000", "/generate", gen(top_n_tokens=1000), 422, "validation", ["`top_n_tokens`", "1000"]),
    ("truncate negative", "/generate", gen(truncate=-5), 422, "validation", ["`truncate`"]),
    ("best_of 3", "/generate", gen(best_of=3, do_sample=True), 422, "validation", ["`best_of`", "<= 2"]),
    ("grammar unsupported keyword", "/generate", gen(grammar={"type": "json", "value": {"type": "integer", "not": {"const": 3}}}),
     422, "validation", ["`grammar.value`", "`not`"]),
    ("grammar pattern with maxLength", "/generate",
     gen(grammar={"type": "json", "value": {"type": "string", "pattern": "a+", "maxLength": 3}}),
     422, "validation", ["`grammar.value`", "`pattern` together with `minLength` or `maxLength`"]),
    ("grammar bad pattern", "/generate", gen(grammar={"type": "json", "value": {"type": "string", "pattern": "(?i)a"}}),
     422, "validation", ["`grammar.value`", "schema at /pattern: regex at offset"]),
    ("grammar regex too many states", "/generate", gen(grammar={"type": "regex", "value": "[a-z]{9000}"}),
     422, "validation", ["`grammar.value`", "limit"]),
    ("stream list inputs", "/generate_stream", j({"inputs": ["a", "b"]}), 422, "validation", ["`inputs`"]),
    ("stream flag is a string", "/", j({"inputs": "Hi", "stream": "yes"}), 422, "validation", ["`stream`"]),
    ("5000 stop sequences", "/generate", gen(max_new_tokens=4, stop=["s%d" % i for i in range(5000)]), 422,
     "validation", ["`stop`", "5000"]),
    ("empty stop sequence", "/generate", gen(max_new_tokens=4, stop=[""]), 422, "validation", ["`stop`", "empty"]),
    ("invalid UTF-8 in a string", "/generate", b'{"inputs":"Hello \xff\xfe world","parameters":{"max_new_tokens":4}}',
     422, "validation", ["parse error", "UTF-8"]),
    ("invalid UTF-8 outside strings", "/generate", b'{"inputs":"Hello"\xc3}', 422, "validation", ["parse error"]),
    ("lone surrogate escape", "/generate", b'{"inputs":"\\ud800","parameters":{"max_new_tokens":4}}', 422,
     "validation", ["parse error"]),
    ("completions n 0", "/v1/completions", j({"prompt": "Hi", "n": 0}), 422, "validation", ["`n`"]),
    ("completions n 10^6", "/v1/completions", j({"prompt": "Hi", "n": 10 ** 6}), 422, "validation", ["`n`"]),
    ("completions max_tokens -1", "/v1/completions", j({"prompt": "Hi", "max_tokens": -1}), 422, "validation",
     ["`max_tokens`"]),
    ("completions temperature 5", "/v1/completions", j({"prompt": "Hi", "temperature": 5}), 422, "validation",
     ["`temperature`"]),
    ("completions logprobs 99", "/v1/completions", j({"prompt": "Hi", "logprobs": 99}), 422, "validation",
     ["`logprobs`"]),
    ("completions prompt empty list", "/v1/completions", j({"prompt": []}), 422, "validation", ["`prompt`"]),
    ("completions stop 5000", "/v1/completions", j({"prompt": "Hi", "stop": ["x%d" % i for i in range(5000)]}),
     422, "validation", ["`stop`", "5000"]),
    ("chat messages empty", "/v1/chat/completions", j({"messages": []}), 422, "validation", ["`messages`"]),
    ("chat messages not objects", "/v1/chat/completions", j({"messages": ["hi"]}), 422, "validation",
     ["role"]),
    ("chat content parts wrong", "/v1/chat/completions",
     j({"messages": [{"role": "user", "content": [{"type": "image", "url": "x"}]}]}), 422, "validation",
     ["content"]),
    ("chat tools", "/v1/chat/completions", j({"messages": [{"role": "user", "content": "Hi"}], "tools": [
        {"type": "function", "function": {"name": "f g", "parameters": {}}}]}), 422, "validation",
     ["`tools[0].function.name`"]),
    ("chat response_format bad type", "/v1/chat/completions", j({"messages": [{"role": "user", "content": "Hi"}],
                                                                 "response_format": {"type": "xml"}}),
     422, "validation", ["`response_format.type`"]),
    ("tokenize number", "/tokenize", j({"inputs": 5}), 422, "validation", ["`inputs`"]),
]


class BadInputTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server("--memory-limit", "512Mi")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        if code != 0:
            raise AssertionError("server exited %s after SIGTERM:\n%s" % (code, cls.server.output()[-2000:]))

    def assert_still_serving(self, after):
        self.assertIsNone(self.server.proc.poll(), "the server died after %s" % after)
        self.assertEqual(self.server.get("/health")[0], 200, after)
        status, body, _ = self.server.post_json("/generate", OK_BODY, timeout_s=60)
        self.assertEqual(status, 200, "%s: then %s" % (after, body))
        self.assertTrue(body["generated_text"])

    def assert_openai_error(self, r, status, words, what):
        """OpenAI's error object, on /v1/ paths: a 422 is sent as 400."""
        self.assertEqual(r.status, 400 if status == 422 else status, "%s: %s" % (what, r.body[:300]))
        self.assertTrue(r.headers.get("content-type", "").startswith("application/json"), what)
        error = r.json()["error"]
        self.assertEqual(set(error), {"message", "type", "param", "code"}, what)
        self.assertEqual(error["type"], "invalid_request_error", what)
        for w in words:
            self.assertIn(w.lower(), error["message"].lower(), "%s: %s" % (what, error["message"]))

    def assert_json_error(self, r, status, error_type, words, what):
        self.assertEqual(r.status, status, "%s: %s" % (what, r.body[:300]))
        self.assertTrue(r.headers.get("content-type", "").startswith("application/json"), what)
        body = r.json()  # valid UTF-8 and valid JSON, whatever the input was
        self.assertEqual(set(body), {"error", "error_type"}, what)
        self.assertEqual(body["error_type"], error_type, what)
        self.assertTrue(body["error"], what)
        for w in words:
            self.assertIn(w.lower(), body["error"].lower(), "%s: %s" % (what, body["error"]))
        return body

    def test_each_bad_request_gets_a_json_4xx_naming_the_problem(self):
        for name, path, body, status, error_type, words in CASES:
            with self.subTest(name):
                r = rawhttp.send(self.server.port, body, path=path)
                if path.startswith("/v1/"):
                    self.assert_openai_error(r, status, words, name)
                else:
                    self.assert_json_error(r, status, error_type, words, name)
                self.assert_still_serving(name)

    def test_unknown_fields_are_ignored_as_tgi_does(self):
        body = j({"inputs": "Once upon a time", "colour": "blue",
                  "parameters": {"max_new_tokens": 4, "frobnicate": True, "nested": {"x": [1, 2]}}})
        r = rawhttp.send(self.server.port, body)
        self.assertEqual(r.status, 200, r.body[:300])
        self.assertTrue(r.json()["generated_text"])
        self.assert_still_serving("unknown fields")

    def test_unknown_route_and_method_are_json_errors(self):
        r = rawhttp.send(self.server.port, b"{}", path="/no/such/route")
        self.assert_json_error(r, 404, "not_found", ["/no/such/route"], "unknown route")
        self.assert_still_serving("unknown route")

    def test_oversized_body_is_413(self):
        body = j({"inputs": "a " * 1_000_001})
        self.assertGreater(len(body), 2_000_000)
        r = rawhttp.send(self.server.port, body)
        self.assert_json_error(r, 413, "validation", ["payload too large", "2000000"], "2 MB body")
        self.assert_still_serving("oversized body")

    def test_chunked_body_is_refused_before_it_is_read(self):
        # cpp-httplib 0.11.4 applies the payload limit only to bodies with Content-Length
        # (a 64 MB chunked body once took the process to 3.4 GiB peak RSS with a 512 MiB
        # plan), so the server refuses chunked bodies with 411 before reading them.
        with rawhttp.connect(self.server.port) as s:
            s.sendall(rawhttp.request_head("POST", "/generate", None, ["Transfer-Encoding: chunked"]))
            chunk = b"x" * 65536
            try:
                for _ in range(40):  # 2.6 MB, past the 2 MB limit
                    s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                s.sendall(b"0\r\n\r\n")
            except OSError:
                pass  # the server may answer and close before the whole body is sent
            r = rawhttp.read_response(s)
        self.assert_json_error(r, 411, "validation", ["Content-Length"], "chunked 2.6 MB body")
        self.assert_still_serving("oversized chunked body")

    def test_10_mb_prompt_is_413_at_the_default_payload_limit(self):
        r = rawhttp.send(self.server.port, j({"inputs": "Once upon a time " * 600_000}))
        self.assert_json_error(r, 413, "validation", ["payload too large"], "10 MB prompt")
        self.assert_still_serving("10 MB prompt")

    def test_stalled_body_is_dropped_by_the_read_timeout_while_others_are_served(self):
        with rawhttp.connect(self.server.port, timeout_s=READ_TIMEOUT_S + 30) as s:
            s.sendall(rawhttp.request_head("POST", "/generate", 1000) + b'{"inputs":')
            ended = threading.Event()
            outcome = {}

            def wait_for_server():
                t0 = time.time()
                data = b""
                try:
                    while True:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                except OSError as e:
                    outcome["error"] = repr(e)
                outcome["seconds"] = time.time() - t0
                outcome["data"] = data
                ended.set()
            waiter = threading.Thread(target=wait_for_server)
            waiter.start()
            served = 0
            while not ended.wait(2.0):
                t0 = time.time()
                self.assert_still_serving("a stalled body")
                self.assertLess(time.time() - t0, 5.0, "others were not served while a body stalled")
                served += 1
            waiter.join()
        print("stalled body dropped after %.1f s; %d requests served meanwhile; answer %r"
              % (outcome["seconds"], served, outcome["data"][:120]))
        self.assertNotIn("error", outcome)
        self.assertGreater(outcome["seconds"], READ_TIMEOUT_S - 2)
        self.assertLess(outcome["seconds"], READ_TIMEOUT_S + 10)
        self.assertGreater(served, 5)
        if outcome["data"]:
            r = rawhttp.parse_response(outcome["data"])
            self.assertGreaterEqual(r.status, 400)
            self.assertLess(r.status, 500)
        self.assert_still_serving("the stalled body's end")


class PromptMemoryTest(unittest.TestCase):
    def test_eight_max_size_prompts_at_once_stay_within_the_memory_plan(self):
        # build_prompt (src/api/validation.cpp) once tokenized the whole prompt before
        # checking max_input_tokens: a 2 MB prompt cost about 94 MB of transient memory.
        # It now refuses (or, with `truncate`, cuts) by byte length first.
        server = Server("--memory-limit", "512Mi")
        try:
            body = j({"inputs": "Once upon a time " * 117_000, "parameters": {"max_new_tokens": 4}})
            self.assertLess(len(body), 2_000_000)
            results, refused = [], []

            def send_until_answered():
                # Each body reserves 33 x its size of --max-body-bytes-in-flight (64 MiB by
                # default) before it is read: one such body at a time, the rest 429 + Retry-After.
                for _ in range(200):
                    r = rawhttp.send(server.port, body, timeout_s=300)
                    if r.status != 429:
                        break
                    refused.append(r.headers.get("retry-after"))
                    time.sleep(0.05)
                results.append(r)
            threads = [threading.Thread(target=send_until_answered) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual([r.status for r in results], [422] * 8)
            self.assertTrue(all(v == "1" for v in refused), refused)
            m = server.metrics()
            planned = sum(v for k, v in m.items() if k.startswith("plimsoll_memory_planned_bytes"))
            peak = server.peak_rss_bytes()
            print("8 x 2 MB prompts: peak RSS %.1f MiB, planned %.1f MiB" % (peak / 2**20, planned / 2**20))
            self.assertLessEqual(peak, planned)
        finally:
            server.stop()


class TenMegabytePromptTest(unittest.TestCase):
    def test_10_mb_prompt_past_the_payload_limit_is_422_and_the_server_goes_on(self):
        # A 16 MiB body reserves 33 x 16 MiB of the transport budget (a worst-case JSON tree).
        server = Server("--memory-limit", "1Gi", "--payload-limit", "16Mi")
        try:
            prompt = "Once upon a time " * 600_000
            body = j({"inputs": prompt, "parameters": {"max_new_tokens": 4}})
            self.assertGreater(len(body), 10_000_000)
            t0 = time.time()
            r = rawhttp.send(server.port, body, timeout_s=120)
            seconds = time.time() - t0
            m = server.metrics()
            planned = sum(v for k, v in m.items() if k.startswith("plimsoll_memory_planned_bytes"))
            peak = server.peak_rss_bytes()
            print("10 MB prompt: %d in %.2f s: %s; peak RSS %.1f MiB, planned %.1f MiB"
                  % (r.status, seconds, r.body[:200], peak / 2**20, planned / 2**20))
            self.assertEqual(r.status, 422, r.body[:300])
            body = r.json()
            self.assertEqual(body["error_type"], "validation")
            self.assertIn("`inputs` must have less than", body["error"])
            self.assertLess(seconds, 120)
            self.assertIsNone(server.proc.poll())
            status, answer, _ = server.post_json("/generate", OK_BODY)
            self.assertEqual(status, 200, answer)
            # The peak is printed, not asserted: see PromptMemoryTest (known bug).
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
