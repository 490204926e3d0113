"""The grammar cache (issue 39): identical grammars are compiled once, shared by
concurrent and later requests, and charged to the plan's grammar cache line,
not to each request's memory.

With --max-request-memory 24Mi a grammar compile (its 24 MiB workspace is
reserved from the request memory while it runs) fits only when nothing else
holds request memory, and without the cache each constrained request then holds
~8.5 MiB (its grammar's whole lazy budget) while it runs. A plain "blocker"
(/generate with a list of prompts, one submission queued ahead, a few MiB of
request memory) keeps the engine busy while N chat requests with the same
json_schema arrive together:
- with the cache (the default, after one request compiled the schema): all N
  are admitted at once (waiting + running reaches N + 1, a state waited for
  with a deadline) and all are served, valid under the schema;
- without it (--grammar-cache-memory 0): each must compile again, the
  workspace does not fit beside the blocker, and they are answered 429.
No timing assertion: the blocker is long (thousands of steps) and the test
waits for states, not durations."""

import json
import threading
import unittest

from server import Server

MIB = 1024 * 1024
N = 8
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["name", "age"],
          "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}}}
BLOCKER = {"inputs": ["Once upon a time"] * 96, "parameters": {"max_new_tokens": 400}}
SERVER_ARGS = ("--memory-limit", "512Mi", "--max-request-memory", "24Mi", "--max-batch-size", "4")


def chat(schema=SCHEMA):
    return {"model": "stories260K", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 40,
            "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": schema}}}


def in_flight(m):
    return m.get("plimsoll_num_requests_waiting", 0) + m.get("plimsoll_num_requests_running", 0)


class SameSchemaTest(unittest.TestCase):
    def run_round(self, server):
        """One constrained request alone (compiles), then N at once behind the
        blocker: their statuses and whether all N + 1 were in flight together."""
        status, body, _ = server.post_json("/v1/chat/completions", chat())
        self.assertEqual(status, 200, body)
        blocker = {}
        t = threading.Thread(target=lambda: blocker.update(r=server.post_json("/generate", BLOCKER)))
        t.start()
        m = server.metrics_when(lambda m: in_flight(m) >= 1)
        self.assertGreaterEqual(in_flight(m), 1, "the blocker was never admitted")
        answers = [None] * N

        def one(i):
            answers[i] = server.post_json("/v1/chat/completions", chat(), timeout_s=300)[:2]
        threads = [threading.Thread(target=one, args=(i,)) for i in range(N)]
        for th in threads:
            th.start()
        together = server.metrics_when(lambda m: in_flight(m) >= N + 1 or all(a is not None for a in answers),
                                       timeout_s=60)
        for th in threads:
            th.join(300)
        t.join(300)
        self.assertEqual(blocker["r"][0], 200, blocker["r"][1])
        return answers, in_flight(together) >= N + 1

    def test_same_schema_requests_share_one_cached_grammar(self):
        server = Server(*SERVER_ARGS)
        try:
            answers, together = self.run_round(server)
            codes = [a[0] for a in answers]
            print("cache on, 24Mi request memory: %d same-schema requests beside a blocker: %s; all in flight "
                  "together: %s" % (N, codes, together))
            self.assertEqual(codes, [200] * N, answers)
            self.assertTrue(together, "the %d requests were not all admitted at once" % N)
            for _, body in answers:
                value = json.loads(body["choices"][0]["message"]["content"])
                self.assertEqual(sorted(value), ["age", "name"])
                self.assertIsInstance(value["age"], int)
            m = server.metrics()
            self.assertEqual(m["plimsoll_grammar_cache_misses_total"], 1)
            self.assertEqual(m["plimsoll_grammar_cache_hits_total"], N)
            self.assertEqual(m["plimsoll_grammar_cache_entries"], 1)
            self.assertGreater(m["plimsoll_grammar_cache_bytes"], 8 * MIB)
            self.assertLessEqual(m["plimsoll_grammar_cache_bytes"], 32 * MIB)
            self.assertIn("grammar cache", server.output())  # the plan's line
        finally:
            self.assertEqual(server.stop(), 0)

    def test_without_the_cache_each_request_compiles_and_is_refused_beside_the_blocker(self):
        server = Server(*SERVER_ARGS, "--grammar-cache-memory", "0")
        try:
            answers, _ = self.run_round(server)
            codes = [a[0] for a in answers]
            print("cache off, 24Mi request memory: %d same-schema requests beside a blocker: %s" % (N, codes))
            self.assertTrue(all(c in (200, 429) for c in codes), answers)
            self.assertEqual(codes.count(200), 0, "a compile's 24 MiB workspace fit beside the blocker")
            self.assertEqual(server.metrics().get("plimsoll_grammar_cache_hits_total", 0), 0)
        finally:
            self.assertEqual(server.stop(), 0)


if __name__ == "__main__":
    unittest.main()
