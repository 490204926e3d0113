"""A seeded mutation fuzzer for the running server (the black-box twin of
tests/fuzz/request_fuzz.cpp): valid bodies for every route, mutated in depth,
size, types, unicode and numbers at their limits, then as bytes; sent by four
clients to `plimsoll serve` inside its memory cgroup. Request i of seed S is
always the same bytes (random.Random(S * 1,000,003 + i)), so a finding is
replayed by its seed and index; the bodies of bad answers are saved under
/tmp/plimsoll-hostile-fuzz/.

Longer runs: PLIMSOLL_FUZZ_SECONDS=1800 PLIMSOLL_FUZZ_SEED=$RANDOM \\
  python3 tests/system/run_suite.py test_hostile  (or -k FuzzTest with unittest)."""

import copy
import json
import os
import random
import threading
import time

import hostile

SAVE_DIR = "/tmp/plimsoll-hostile-fuzz"
CLIENTS = 4
REQUEST_TIMEOUT_S = 30.0
MAX_BODY_BYTES = 2_200_000  # a little over the default payload limit

SEEDS = [
    ("POST", "/generate", {"inputs": "Once upon a time", "parameters": {
        "max_new_tokens": 8, "details": True, "top_n_tokens": 2, "stop": ["."], "temperature": 0.8,
        "do_sample": True, "seed": 3, "decoder_input_details": True, "truncate": 10, "return_full_text": False,
        "repetition_penalty": 1.1, "top_k": 10, "top_p": 0.9, "typical_p": 0.9, "frequency_penalty": 0.1,
        "best_of": 1, "watermark": False}}),
    ("POST", "/generate", {"inputs": ["Once", "Upon a"], "parameters": {"max_new_tokens": 4}}),
    ("POST", "/generate_stream", {"inputs": "Once upon a time", "parameters": {
        "max_new_tokens": 8, "details": True, "top_n_tokens": 3}}),
    ("POST", "/", {"inputs": "Hi", "parameters": {"max_new_tokens": 4}, "stream": False}),
    ("POST", "/tokenize", {"inputs": "Once upon a time"}),
    ("POST", "/v1/completions", {"model": "m", "prompt": ["Once", "The cat"], "max_tokens": 8, "n": 2,
                                 "logprobs": 2, "echo": True, "stop": ["."], "seed": 1, "temperature": 0.5,
                                 "top_p": 0.9, "presence_penalty": 0.1, "frequency_penalty": 0.1, "stream": False,
                                 "ignore_eos": False, "stream_options": {"include_usage": True}}),
    ("POST", "/v1/chat/completions", {"model": "m", "messages": [
        {"role": "system", "content": "Be brief"},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "max_tokens": 8, "n": 2, "logprobs": True, "top_logprobs": 2, "stop": ".", "max_completion_tokens": 8}),
    ("GET", "/health", None), ("GET", "/info", None), ("GET", "/metrics", None), ("GET", "/v1/models", None),
]

KNOWN_COUNTS = ["max_new_tokens", "max_tokens", "max_completion_tokens", "n", "top_n_tokens", "logprobs",
                "top_logprobs", "best_of", "truncate", "seed", "top_k"]
INTS = [0, 1, -1, 2, 4, 5, 6, 127, 128, 129, 511, 512, 513, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 + 1,
        2 ** 63 - 1, 2 ** 63, 2 ** 64, -2 ** 63, -2 ** 63 - 1, 10 ** 30]
FLOATS = [0.5, -0.0, 1e308, -1e308, 5e-324, 1e-320, 0.9999999999999999, 2.0000000000000004]
RAW_NUMBERS = [b"1e400", b"-1e400", b"1" + b"0" * 5000, b"NaN", b"Infinity", b"-", b"01", b"1.", b".5",
               b"0x10", b"1e-400", b"-0", b"1E+2", b"123456789012345678901234567890e-10"]
STRINGS = ["", " ", "\u202e\u0645\u0631\u062d\u0628\u0627", "\U0001f600" * 1000, "e\u0301" * 5000, "\u0000",
           "\uffff\ufeff", "\u4e2d\u6587" * 20_000, "<|endoftext|>" * 100, "{{ raise_exception('x') }}",
           "{% for i in range(99999999) %}x{% endfor %}"]
RAW_STRINGS = [b'"\\ud800"', b'"\\udfff\\ud800"', b'"\\u0000\\u0000"', b'"\\uD83D"', b'"\\x41"', b'"\t"',
               b'"a\\"', b'"\xff\xfe"', b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"']


class Raw:
    """Bytes spliced into the JSON text as they are (a deep nesting, a number
    Python cannot write, an invalid escape)."""

    def __init__(self, data):
        self.data = data


def chunks(value):
    """The JSON text of value in pieces, with Raw nodes spliced in (the tree itself is shallow)."""
    if isinstance(value, Raw):
        yield value.data
    elif isinstance(value, dict):
        yield b"{"
        for i, (k, v) in enumerate(value.items()):
            yield b"," if i else b""
            yield from chunks(k)
            yield b":"
            yield from chunks(v)
        yield b"}"
    elif isinstance(value, list):
        yield b"["
        for i, v in enumerate(value):
            yield b"," if i else b""
            yield from chunks(v)
        yield b"]"
    else:
        yield json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def dump(value, limit_bytes=None):
    """JSON text of value, cut at limit_bytes: a list of 100,000 copies of a
    1.9 MB string is never written out whole (the body is cut there anyway)."""
    out, size = [], 0
    for piece in chunks(value):
        out.append(piece)
        size += len(piece)
        if limit_bytes is not None and size > limit_bytes:
            break
    data = b"".join(out)
    return data if limit_bytes is None else data[:limit_bytes]


def containers(value, out):
    if isinstance(value, dict):
        out.append(value)
        for v in value.values():
            containers(v, out)
    elif isinstance(value, list):
        out.append(value)
        for v in value:
            containers(v, out)
    return out


def leaf_value(rng):
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice(INTS)
    if kind == 1:
        return rng.choice(FLOATS)
    if kind == 2:
        return Raw(rng.choice(RAW_NUMBERS))
    if kind == 3:
        return rng.choice(STRINGS)
    if kind == 4:
        return Raw(rng.choice(RAW_STRINGS))
    if kind == 5:
        return "a" * rng.choice([1000, 100_000, 1_000_000, 1_900_000])
    if kind == 6:
        return rng.choice([None, True, False, [], {}, [[]], {"": {}}])
    depth = rng.choice([10, 100, 1000, 10_000, 100_000, 300_000])
    return Raw(rng.choice([b"[" * depth + b"]" * depth, b'{"a":' * depth + b"0" + b"}" * depth,
                           b"[" * depth]))


def big_array(rng):
    count = rng.choice([1000, 100_000, 500_000])
    item = rng.choice([b"0", b"{}", b'"a"', b"[]", b"null", b"1e308", b'{"role":"user","content":"hi"}'])
    return Raw(b"[" + b",".join([item] * count) + b"]")


def mutate_tree(rng, value):
    nodes = containers(value, [])
    if not nodes:
        return leaf_value(rng)
    node = rng.choice(nodes)
    op = rng.randrange(7)
    if isinstance(node, dict):
        keys = list(node)
        if op == 0 or not keys:
            node[rng.choice(["x", "logit_bias", "tools_x", "stream", "inputs", "prompt", "messages",
                             "parameters", "\u0000", "a" * 10_000])] = leaf_value(rng)
        elif op == 1:
            del node[rng.choice(keys)]
        elif op == 2:
            node[rng.choice(KNOWN_COUNTS)] = rng.choice(INTS)
        elif op == 3:
            node[rng.choice(keys)] = big_array(rng)
        elif op == 4:
            node["stream"] = True
        else:
            node[rng.choice(keys)] = leaf_value(rng)
    else:
        if op == 0 and node:
            node[rng.randrange(len(node))] = leaf_value(rng)
        elif op == 1:
            node.extend([copy.deepcopy(node[0]) if node else 0] * rng.choice([10, 1000, 100_000]))
        elif op == 2 and node:
            del node[rng.randrange(len(node))]
        else:
            node.append(leaf_value(rng))
    return value


def mutate_bytes(rng, data):
    op = rng.randrange(6)
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    i = rng.randrange(len(data))
    if op == 0:
        return data[:i]
    if op == 1:
        return data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
    if op == 2:
        return data[:i] + rng.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\x00", b"\\", b'"', b"}", b"]",
                                      b",", b":"]) + data[i:]
    if op == 3:
        j = min(len(data), i + rng.randrange(1, 64))
        return data[:i] + data[i:j] * rng.choice([2, 100, 10_000]) + data[j:]
    if op == 4:
        return data + data
    return data.replace(b'"', b"'", rng.randrange(1, 4))


def request(seed, index):
    """(method, path, body bytes, extra headers) of request index of this seed."""
    rng = random.Random(seed * 1_000_003 + index)
    method, path, value = rng.choices(SEEDS, weights=[3 if m == "POST" else 1 for m, _, _ in SEEDS])[0]
    value = copy.deepcopy(value) if value is not None else rng.choice([None, {}, {"inputs": "Hi"}])
    if value is not None:
        for _ in range(rng.randint(1, 3)):
            value = mutate_tree(rng, value)
    # Cut at twice the limit: mutate_bytes may cut or double it before the final cut.
    data = b"" if value is None else dump(value, 2 * MAX_BODY_BYTES)
    if rng.random() < 0.25:
        data = mutate_bytes(rng, data)
    data = data[:MAX_BODY_BYTES]
    extra = []
    if rng.random() < 0.1:
        extra.append(rng.choice(["Content-Type: text/plain", "Expect: 100-continue", "Accept: text/event-stream",
                                 "Content-Encoding: gzip", "Accept-Encoding: gzip"]))
    return method, path, data, extra


def seed_from_env():
    return int(os.environ.get("PLIMSOLL_FUZZ_SEED", "17"))


def seconds_from_env():
    return float(os.environ.get("PLIMSOLL_FUZZ_SECONDS", "40"))


class Fuzzer:
    def __init__(self, seed):
        self.seed = seed
        self.next_index = 0
        self.lock = threading.Lock()
        self.answers = []
        self.findings = []  # (index, why, answer)

    def _take(self):
        with self.lock:
            self.next_index += 1
            return self.next_index - 1

    def _client(self, box, end):
        while time.monotonic() < end and box.server.proc.poll() is None:
            index = self._take()
            method, path, data, extra = request(self.seed, index)
            a = hostile.exchange(box.port, hostile.head(method, path, len(data), extra, box.api_key), data,
                                 timeout_s=REQUEST_TIMEOUT_S)
            why = hostile.judge(a, allow_ok=True, allow_close=False, allow_timeout=True)
            if a.outcome == "answered" and a.status == 200:
                a.body = b""  # not judged further; keep the run's memory small
            with self.lock:
                self.answers.append(a)
                if why:
                    self.findings.append((index, why, a))
            if why:
                os.makedirs(SAVE_DIR, exist_ok=True)
                with open(os.path.join(SAVE_DIR, "%d-%d.bin" % (self.seed, index)), "wb") as f:
                    f.write(("%s %s\n" % (method, path)).encode() + data)

    def run(self, box, seconds):
        """(answers, problems) of a run of `seconds` with CLIENTS clients."""
        t0 = time.monotonic()
        end = t0 + seconds
        threads = [threading.Thread(target=self._client, args=(box, end)) for _ in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        problems = []
        for index, why, a in self.findings[:5]:
            problems.append("request %d (PLIMSOLL_FUZZ_SEED=%d): %s: %s" % (index, self.seed, why, a.describe()))
        if box.server.proc.poll() is not None:
            problems.append("the server died within requests %d..%d of seed %d" % (
                max(0, self.next_index - 2 * CLIENTS), self.next_index, self.seed))
        timeouts = sum(1 for a in self.answers if a.outcome == "timeout")
        print("  fuzz seed %d: %d requests in %.0f s, %s, %d past the %.0f s client deadline" % (
            self.seed, self.next_index, time.monotonic() - t0, hostile.tally(self.answers), timeouts, REQUEST_TIMEOUT_S))
        return self.answers, problems
