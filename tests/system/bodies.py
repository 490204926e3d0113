"""The hostile requests of test_hostile.py, each at the size that would break
a 512 MiB plan on stories260K (context 512, 5 layers, 1,280 KV bytes a token)
while staying under the default 2,000,000-byte payload limit where the point is
what the body costs once read, not its size. Bodies are built when a case runs."""

import itertools
import json
import os

from hostile import MIB

DEPTH = 200_000               # the chat message of 200,000 nested `[`
BIG_STRING = "a" * 1_800_000  # a string field just under the payload limit
STOP_240_KB = "\u00e9" * 120_000   # 240 KB of UTF-8
STORY = "Once upon a time there was a little girl who liked to play. "  # ~15 tokens


def j(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def nest_list(depth=DEPTH):
    return b"[" * depth + b"]" * depth


def nest_obj(depth=DEPTH // 2):
    return b'{"a":' * depth + b"1" + b"}" * depth


def nest_mixed(depth=DEPTH // 4):
    return b'[{"a":' * depth + b"0" + b"}]" * depth


def splice(template, raw):
    """template is JSON text with one `@` where the raw bytes go."""
    before, _, after = template.encode().partition(b"@")
    return before + raw + after


def nested_chat():
    return splice('{"messages":[{"role":"user","content":@}]}', nest_list())


ROUTES = ("/generate", "/generate_stream", "/", "/tokenize", "/v1/completions", "/v1/chat/completions")


def nesting_cases():
    """(name, path, body): deep nesting in every place of a body, on every route."""
    L, O, M = nest_list, nest_obj, nest_mixed
    cases = [
        ("chat content of 200,000 nested [", "/v1/chat/completions", nested_chat),
        ("chat messages nested", "/v1/chat/completions", lambda: splice('{"messages":@}', L())),
        ("chat role nested", "/v1/chat/completions", lambda: splice('{"messages":[{"role":@,"content":"hi"}]}', L())),
        ("chat content part text nested", "/v1/chat/completions",
         lambda: splice('{"messages":[{"role":"user","content":[{"type":"text","text":@}]}]}', O())),
        ("chat stop nested", "/v1/chat/completions",
         lambda: splice('{"messages":[{"role":"user","content":"hi"}],"stop":@}', M())),
        ("chat unknown field nested", "/v1/chat/completions",
         lambda: splice('{"messages":[{"role":"user","content":"hi"}],"tools_x":@}', M())),
        ("generate parameters nested", "/generate", lambda: splice('{"inputs":"Hi","parameters":@}', L())),
        ("generate stop nested", "/generate", lambda: splice('{"inputs":"Hi","parameters":{"stop":@}}', L())),
        ("generate inputs nested", "/generate", lambda: splice('{"inputs":@}', L())),
        ("generate unknown parameter nested objects", "/generate",
         lambda: splice('{"inputs":"Hi","parameters":{"max_new_tokens":4,"x":@}}', O())),
        ("generate_stream unknown field nested", "/generate_stream", lambda: splice('{"inputs":"Hi","x":@}', L())),
        ("compat route stream flag nested", "/", lambda: splice('{"inputs":"Hi","stream":@}', L())),
        ("tokenize inputs nested", "/tokenize", lambda: splice('{"inputs":@}', O())),
        ("tokenize unknown field nested", "/tokenize", lambda: splice('{"inputs":"Hi","x":@}', M())),
        ("completions prompt nested", "/v1/completions", lambda: splice('{"prompt":@}', L())),
        ("completions stop nested", "/v1/completions", lambda: splice('{"prompt":"Hi","stop":@}', L())),
        ("completions stream_options nested", "/v1/completions",
         lambda: splice('{"prompt":"Hi","stream_options":@}', O())),
        ("completions logit_bias nested", "/v1/completions",
         lambda: splice('{"prompt":"Hi","max_tokens":2,"logit_bias":@}', O())),
    ]
    cases += [("whole body nested on %s" % r, r, L) for r in ROUTES]
    return cases


def empty_objects(count):
    """The issue's body: count empty objects in an unknown field of a valid /generate."""
    return b'{"inputs":"Hi","parameters":{"max_new_tokens":4},"x":[' + b"{}," * (count - 1) + b"{}]}"


def chunks(total_bytes, size=65536):
    """A chunked body of total_bytes, one chunk frame at a time (never built whole)."""
    frame = b"%x\r\n" % size + b"x" * size + b"\r\n"
    for _ in range(total_bytes // size):
        yield frame
    yield b"0\r\n\r\n"


def capped(pieces, cap_bytes):
    """The pieces until cap_bytes were produced: the client never sends more."""
    produced = 0
    for piece in pieces:
        if produced >= cap_bytes:
            return
        yield piece
        produced += len(piece)


def endless(piece, cap_bytes):
    produced = 0
    while produced < cap_bytes:
        yield piece
        produced += len(piece)


def slow_head():
    body = j({"inputs": "Once upon a time", "parameters": {"max_new_tokens": 4}})
    return (b"POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


def slow_body():
    """(head sent at once, body trickled)."""
    body = j({"inputs": STORY * 100, "parameters": {"max_new_tokens": 4}})
    return (b"POST /generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)), body


def connection_flood_count(server):
    """More connections than the server's cap: its published cap + 200 where /info
    has one, else 2,000 (PLIMSOLL_HOSTILE_CONNECTIONS overrides)."""
    if os.environ.get("PLIMSOLL_HOSTILE_CONNECTIONS"):
        return int(os.environ["PLIMSOLL_HOSTILE_CONNECTIONS"])
    try:
        info = json.loads(server.get("/info")[1])
        caps = [v for k, v in info.items() if "connection" in k and isinstance(v, int) and v > 0]
        if caps:
            return max(caps) + 200
    except (OSError, ValueError):
        pass
    return 2000


def array_cases():
    n = 300_000
    return [
        ("completions prompt of 900,000 token ids", "/v1/completions",
         lambda: b'{"max_tokens":4,"prompt":[' + b"1," * 899_999 + b"1]}"),
        ("completions prompt of 2-D token ids", "/v1/completions",
         lambda: b'{"max_tokens":4,"prompt":[' + b"[1,1,1,1]," * 179_999 + b"[1]]}"),
        ("generate inputs list of 300,000 prompts", "/generate", lambda: j({"inputs": ["a"] * n})),
        ("completions prompt list of 300,000 prompts", "/v1/completions", lambda: j({"prompt": ["a"] * n})),
        ("logit_bias map of 150,000 entries", "/v1/completions",
         lambda: j({"prompt": "Hi", "max_tokens": 4, "logit_bias": {str(i): 1 for i in range(150_000)}})),
        ("generate stop list of 300,000", "/generate", lambda: j({"inputs": "Hi", "parameters": {"stop": ["a"] * n}})),
        ("completions stop list of 300,000", "/v1/completions", lambda: j({"prompt": "Hi", "stop": ["a"] * n})),
        ("chat stop list of 300,000", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": "hi"}], "stop": ["a"] * n})),
        ("tokenize inputs of 900,000 numbers", "/tokenize", lambda: b'{"inputs":[' + b"1," * 899_999 + b"1]}"),
        ("unknown parameter of 450,000 floats", "/generate",
         lambda: b'{"inputs":"Hi","parameters":{"max_new_tokens":4,"x":[' + b"0.5," * 449_999 + b"0.5]}}"),
        ("150,000 unknown top-level keys", "/generate",
         lambda: j(dict({"inputs": "Hi", "parameters": {"max_new_tokens": 4}},
                        **{"k%d" % i: 0 for i in range(150_000)}))),
        ("one key repeated 300,000 times", "/generate",
         lambda: b'{"inputs":"Hi","parameters":{"max_new_tokens":4},' + b'"x":1,' * n + b'"y":1}'),
    ]


def string_cases():
    s = BIG_STRING
    chat = {"messages": [{"role": "user", "content": "hi"}]}
    return [
        ("generate inputs", "/generate", lambda: j({"inputs": s, "parameters": {"max_new_tokens": 4}})),
        ("generate_stream inputs", "/generate_stream", lambda: j({"inputs": s})),
        ("compat route inputs", "/", lambda: j({"inputs": s, "stream": False})),
        ("tokenize inputs (1.8 MB ASCII)", "/tokenize", lambda: j({"inputs": s})),
        ("generate one stop of 1.8 MB", "/generate", lambda: j({"inputs": "Hi", "parameters": {"stop": [s]}})),
        ("generate unknown parameter string", "/generate",
         lambda: j({"inputs": "Hi", "parameters": {"max_new_tokens": 4, "adapter_id": s}})),
        ("completions prompt", "/v1/completions", lambda: j({"prompt": s, "max_tokens": 4})),
        ("completions stop", "/v1/completions", lambda: j({"prompt": "Hi", "stop": s})),
        ("completions suffix", "/v1/completions", lambda: j({"prompt": "Hi", "suffix": s})),
        ("completions model", "/v1/completions", lambda: j({"prompt": "Hi", "max_tokens": 4, "model": s})),
        ("completions user", "/v1/completions", lambda: j({"prompt": "Hi", "max_tokens": 4, "user": s})),
        ("chat content", "/v1/chat/completions", lambda: j({"messages": [{"role": "user", "content": s}]})),
        ("chat role", "/v1/chat/completions", lambda: j({"messages": [{"role": s, "content": "hi"}]})),
        ("chat content part text", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": [{"type": "text", "text": s}]}]})),
        ("chat content part type", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": [{"type": s, "text": "hi"}]}]})),
        # A chat without max_tokens runs to the context (OpenAI's default): the string is the attack here.
        ("chat message name", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": "hi", "name": s}], "max_tokens": 4})),
        ("chat model", "/v1/chat/completions", lambda: j(dict(chat, model=s, max_tokens=4))),
        ("chat stop", "/v1/chat/completions", lambda: j(dict(chat, stop=s, max_tokens=4))),
        ("a 1.8 MB key", "/generate", lambda: j({s: 1, "inputs": "Hi", "parameters": {"max_new_tokens": 4}})),
        ("escaped emoji inputs", "/generate",
         lambda: b'{"inputs":"' + b"\\ud83d\\ude00" * 150_000 + b'","parameters":{"max_new_tokens":4}}'),
        ("escaped NULs in chat content", "/v1/chat/completions",
         lambda: b'{"messages":[{"role":"user","content":"' + b"\\u0000" * 300_000 + b'"}]}'),
    ]


def message_list_cases():
    return [
        ("chat of 60,000 messages", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": "hi"}] * 60_000, "max_tokens": 4})),
        ("chat of 54,000 alternating messages", "/v1/chat/completions",
         lambda: j({"messages": [{"role": r, "content": "hi"} for r in ("user", "assistant")] * 27_000})),
        ("chat of 35,000 messages of content parts", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}] * 35_000})),
        ("chat of 1,000 messages of 1.7 KB", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": "a" * 1_700}] * 1_000, "max_tokens": 4})),
    ]


def fan_out_cases():
    chat = [{"role": "user", "content": "Tell me a story"}]
    stops = [STOP_240_KB] * 4
    return [
        ("completions 400 prompts x n 128, logprobs 5, max_tokens 500", "/v1/completions",
         lambda: j({"prompt": ["Once"] * 400, "n": 128, "logprobs": 5, "max_tokens": 500, "ignore_eos": True})),
        ("completions 10,000 prompts x n 128", "/v1/completions", lambda: j({"prompt": ["a"] * 10_000, "n": 128})),
        ("chat n 128, top_logprobs 5, max_tokens 500", "/v1/chat/completions",
         lambda: j({"messages": chat, "n": 128, "logprobs": True, "top_logprobs": 5, "max_tokens": 500,
                    "ignore_eos": True})),
        ("generate 20,000 inputs x max_new_tokens 500", "/generate",
         lambda: j({"inputs": ["Hi"] * 20_000, "parameters": {"max_new_tokens": 500}})),
        ("completions best_of 128 with n 128", "/v1/completions",
         lambda: j({"prompt": "Hi", "n": 128, "best_of": 128})),
        ("generate best_of 10^9 with 2,000 inputs", "/generate",
         lambda: j({"inputs": ["Hi"] * 2000, "parameters": {"best_of": 10 ** 9, "do_sample": True}})),
        ("completions 2,000 prompts x 4 stops of 240 KB", "/v1/completions",
         lambda: j({"prompt": ["Hi"] * 2000, "stop": stops})),
        ("chat n 128 x 4 stops of 240 KB", "/v1/chat/completions",
         lambda: j({"messages": chat, "n": 128, "stop": stops, "max_tokens": 500})),
        ("generate_stream with 4 stops of 240 KB", "/generate_stream",
         lambda: j({"inputs": "Hi", "parameters": {"stop": stops, "max_new_tokens": 500}})),
    ]


def logprob_cases():
    prompt = STORY * 26  # ~400 tokens: prompt + 100 new tokens fill the 512 context
    return [
        ("generate 1,000 long inputs, details + prefill + top_n_tokens 5", "/generate",
         lambda: j({"inputs": [prompt] * 1_000, "parameters": {
             "max_new_tokens": 100, "details": True, "decoder_input_details": True, "top_n_tokens": 5}})),
        ("compat route, details + prefill + top_n_tokens 5", "/",
         lambda: j({"inputs": prompt, "stream": False, "parameters": {
             "max_new_tokens": 100, "details": True, "decoder_input_details": True, "top_n_tokens": 5}})),
        ("completions echo + logprobs 5, n 128, 400-token prompt", "/v1/completions",
         lambda: j({"prompt": prompt, "echo": True, "logprobs": 5, "n": 128, "max_tokens": 100,
                    "ignore_eos": True})),
        ("completions 900 prompts x n 2 echo + logprobs 5", "/v1/completions",
         lambda: j({"prompt": [prompt] * 900, "echo": True, "logprobs": 5, "n": 2, "max_tokens": 100})),
        ("chat logprobs top 5, n 128", "/v1/chat/completions",
         lambda: j({"messages": [{"role": "user", "content": prompt}], "logprobs": True, "top_logprobs": 5,
                    "n": 128, "max_tokens": 100, "ignore_eos": True})),
        ("generate_stream details + top_n_tokens 5, 500 tokens", "/generate_stream",
         lambda: j({"inputs": "Once upon a time", "parameters": {
             "max_new_tokens": 500, "details": True, "top_n_tokens": 5}})),
    ]


def stream_bodies(count):
    """(path, body) of count streams that would produce the most if never read."""
    msgs = [{"role": "user", "content": "Tell me a story"}]
    kinds = [
        ("/generate_stream", j({"inputs": "Once upon a time", "parameters": {
            "max_new_tokens": 500, "details": True, "top_n_tokens": 5}})),
        ("/v1/completions", j({"prompt": "Once upon a time", "n": 128, "logprobs": 5, "max_tokens": 500,
                               "ignore_eos": True, "stream": True})),
        ("/v1/chat/completions", j({"messages": msgs, "n": 128, "logprobs": True, "top_logprobs": 5,
                                    "max_tokens": 500, "ignore_eos": True, "stream": True})),
        ("/", j({"inputs": "Once upon a time", "stream": True, "parameters": {
            "max_new_tokens": 500, "top_n_tokens": 5, "details": True}})),
    ]
    return [kinds[i % len(kinds)] for i in range(count)]


def _request(method, path, headers=b""):
    return b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path) + headers


def chunking_cases(cap_bytes):
    """(name, extra header lines, make() -> body pieces) for POST /generate: each
    must be refused before the client sent cap_bytes (all are endless or huge)."""
    junk = b"x" * 65536

    def endless_after(first, piece=junk):
        return lambda: capped(itertools.chain([first], endless(piece, 768 * MIB)), cap_bytes)

    def huge():
        return capped(chunks(768 * MIB), cap_bytes)

    te = "Transfer-Encoding: "
    return [
        ("chunked, 768 MiB", [te + "chunked"], huge),
        ("CHUNKED, 768 MiB", [te + "CHUNKED"], huge),
        ("gzip, chunked", [te + "gzip, chunked"], huge),
        ("two Transfer-Encoding headers", [te + "identity", te + "chunked"], huge),
        ("chunked with Content-Length 5", [te + "chunked", "Content-Length: 5"], huge),
        ("chunk size of 21 hex digits", [te + "chunked"], endless_after(b"f" * 21 + b"\r\n")),
        ("chunk size 7fffffffffffffff", [te + "chunked"], endless_after(b"7fffffffffffffff\r\n")),
        ("negative chunk size", [te + "chunked"], endless_after(b"-1\r\n")),
        ("non-hex chunk size", [te + "chunked"], endless_after(b"zz\r\n")),
        ("endless chunk extension", [te + "chunked"], endless_after(b"1;ext=", b"a" * 65536)),
        ("chunk data without CRLF", [te + "chunked"], endless_after(b"", b"5\r\nhelloXX" * 8192)),
        ("endless trailer", [te + "chunked"], endless_after(b"0\r\n", b"X-T: y\r\n" * 8192)),
        ("endless 1-byte chunks", [te + "chunked"], endless_after(b"", b"1\r\na\r\n" * 10923)),
    ]



def header_flood_cases(cap_bytes):
    """(name, parallel connections, make() -> the request's pieces)."""
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(300_000))  # 300,000 headers, ~4 MB

    def endless_header(prefix, piece=b"a" * 65536):
        return lambda: capped(itertools.chain([prefix], endless(piece, 768 * MIB)), cap_bytes)

    return [
        ("one endless header value", 1, endless_header(_request(b"POST", b"/generate") + b"X-Junk: ")),
        ("16 connections x endless header value", 16, endless_header(_request(b"GET", b"/health") + b"X-Junk: ")),
        ("300,000 headers x 16 connections", 16,
         lambda: [_request(b"POST", b"/generate", b"Content-Length: 2\r\n") + many + b"\r\n{}"]),
        ("300,000 headers on /health x 16", 16, lambda: [_request(b"GET", b"/health") + many + b"\r\n"]),
        ("endless request line", 1, endless_header(b"GET /")),
        ("endless header name", 1, endless_header(_request(b"GET", b"/metrics"))),
        ("endless folded header", 1, endless_header(_request(b"GET", b"/health") + b"X-F: a\r\n", b" a\r\n" * 16384)),
    ]
