"""Tool calling end to end (issue 19): a tiny random-weight Qwen2 folder with
Qwen2.5's chat template (the Hermes `<tool_call>` family; built as in
test_hf_serve). `tool_choice` "required" and a named function give a
well-formed call under the tool's schema for every seed (random weights); the
prompt with tools, and with a call and its result, is Python jinja2's
rendering of the template (tests/data/tool_templates/renders.jsonl) tokenized
by the server; calls stream as OpenAI deltas; bad tools are 400s naming the
field and the limit."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from server import REPO, Server
from test_hf_serve import make_qwen2_folder

DATA = os.path.join(REPO, "tests", "data")
SDK = os.path.join(REPO, "tests", "sdk")


def recorded(conversation):
    with open(os.path.join(DATA, "tool_templates", "renders.jsonl"), encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["template"] == "qwen2_5" and r["conversation"] == conversation:
                return r
    raise KeyError(conversation)


def openai_messages(messages):
    """The recorded context's messages as an OpenAI client sends them (arguments as JSON text)."""
    out = []
    for m in messages:
        m = dict(m)
        if "tool_calls" in m:
            m["tool_calls"] = [dict(c, function=dict(c["function"], arguments=json.dumps(c["function"]["arguments"])))
                               for c in m["tool_calls"]]
        out.append(m)
    return out


def stream_events(server, body):
    raw = server.request("POST", "/v1/chat/completions", dict(body, stream=True))[1].decode()
    events = [line[len("data: "):] for line in raw.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]", raw
    return [json.loads(e) for e in events[:-1]]


class ToolCallingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="plimsoll-tools-")
        cls.folder = os.path.join(cls.tmp, "tiny-qwen2")
        os.mkdir(cls.folder)
        make_qwen2_folder(cls.folder)
        cls.server = Server("--memory-limit", "512Mi", "--max-total-tokens", "1024", model=cls.folder)
        cls.tools = recorded("tools_question")["context"]["tools"]

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if code != 0:
            raise AssertionError("server exited %s after SIGTERM:\n%s" % (code, cls.server.output()[-2000:]))

    def chat(self, **body):
        body.setdefault("messages", [{"role": "user", "content": "What is the weather in Paris?"}])
        return self.server.post_json("/v1/chat/completions", body)

    def check_call(self, call, names):
        self.assertEqual(call["type"], "function")
        self.assertTrue(call["id"].startswith("call_"), call)
        self.assertIn(call["function"]["name"], names)
        arguments = json.loads(call["function"]["arguments"])
        tool = next(t for t in self.tools if t["function"]["name"] == call["function"]["name"])
        try:
            import jsonschema
        except ImportError:
            self.assertIsInstance(arguments, dict)
            return
        jsonschema.validate(arguments, tool["function"]["parameters"])

    def test_prompt_with_tools_is_jinja2s_rendering(self):
        for conversation in ("tools_question", "call_and_result"):
            r = recorded(conversation)
            status, body, _ = self.chat(messages=openai_messages(r["context"]["messages"]), tools=r["context"]["tools"],
                                        max_tokens=1)
            self.assertEqual(status, 200, body)
            status, spans, _ = self.server.post_json("/tokenize", {"inputs": r["output"]})
            self.assertEqual(status, 200, spans)
            self.assertEqual(body["usage"]["prompt_tokens"], len(spans), conversation)

    def test_required_and_named_always_give_a_well_formed_call(self):
        names = [t["function"]["name"] for t in self.tools]
        for seed in range(8):
            for choice in ("required", {"type": "function", "function": {"name": "get_weather"}}):
                status, body, _ = self.chat(tools=self.tools, tool_choice=choice, seed=seed, temperature=1.0,
                                            max_tokens=100 + 10 * (seed % 4))
                self.assertEqual(status, 200, body)
                c = body["choices"][0]
                self.assertEqual(c["finish_reason"], "tool_calls", (seed, c))
                self.assertIsNone(c["message"]["content"], (seed, c))
                self.assertEqual(len(c["message"]["tool_calls"]), 1)
                call = c["message"]["tool_calls"][0]
                self.check_call(call, names if choice == "required" else ["get_weather"])

    def test_auto_answers_are_content_or_calls(self):
        for seed in range(6):
            status, body, _ = self.chat(tools=self.tools, seed=seed, temperature=1.0, max_tokens=24)
            self.assertEqual(status, 200, body)
            c = body["choices"][0]
            if c["finish_reason"] == "tool_calls":
                self.check_call(c["message"]["tool_calls"][0], [t["function"]["name"] for t in self.tools])
            else:
                self.assertIsInstance(c["message"]["content"], str)
                self.assertNotIn("tool_calls", c["message"])

    def test_streamed_calls_are_openai_deltas(self):
        body = {"messages": [{"role": "user", "content": "Weather?"}], "tools": self.tools, "tool_choice": "required",
                "seed": 3, "temperature": 1.0, "max_tokens": 100}
        whole = self.chat(**body)[1]["choices"][0]["message"]["tool_calls"][0]
        chunks = stream_events(self.server, body)
        calls = {}
        finish = None
        for chunk in chunks:
            for choice in chunk["choices"]:
                self.assertNotIn("content", {k: v for k, v in choice["delta"].items() if v})  # nothing but calls
                for d in choice["delta"].get("tool_calls", []):
                    c = calls.setdefault(d["index"], {"id": None, "name": "", "arguments": ""})
                    c["id"] = d.get("id", c["id"])
                    c["name"] += d.get("function", {}).get("name", "")
                    c["arguments"] += d.get("function", {}).get("arguments", "")
                finish = choice["finish_reason"] or finish
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(list(calls), [0])
        self.assertEqual(calls[0]["name"], whole["function"]["name"])
        self.assertEqual(calls[0]["arguments"], whole["function"]["arguments"])  # same seed, same call
        self.assertTrue(calls[0]["id"].startswith("call_"))

    def test_npm_clients_with_tools(self):
        """tests/sdk/tools.test.js: the openai SDK, @huggingface/inference and LangChain JS with tools."""
        self.assertTrue(os.path.isdir(os.path.join(SDK, "node_modules")),
                        "tests/sdk/node_modules is missing: run scripts/install-deps (npm ci --prefix tests/sdk)")
        r = subprocess.run(["node", "--test", "tools.test.js"], cwd=SDK, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, PLIMSOLL_TOOLS_URL=self.server.url))
        print(r.stdout[-1500:])
        self.assertEqual(r.returncode, 0, r.stdout[-4000:] + r.stderr[-2000:])
        tests = re.search(r"^# tests (\d+)$", r.stdout, re.M)
        self.assertTrue(tests and int(tests.group(1)) > 0, r.stdout[-1500:])
        self.assertIn("# pass %s\n" % tests.group(1), r.stdout)  # none skipped

    def test_bad_tools_are_400s_naming_field_and_limit(self):
        def error(**body):
            status, answer, _ = self.chat(**body)
            self.assertEqual(status, 400, answer)
            return answer["error"]["message"]

        tool = self.tools[1]
        self.assertIn("128", error(tools=[dict(tool, function=dict(tool["function"], name="f%d" % i))
                                          for i in range(129)]))
        deep = {"type": "object"}
        for _ in range(20):
            deep = {"type": "object", "properties": {"x": deep}}
        message = error(tools=[{"type": "function", "function": {"name": "f", "parameters": deep}}])
        self.assertIn("tools[0].function.parameters", message)
        self.assertIn("16", message)
        self.assertIn("tool_choice", error(tools=self.tools, tool_choice={"type": "function", "function": {"name": "nope"}}))
        self.assertIn("response_format", error(tools=self.tools, tool_choice="required",
                                               response_format={"type": "json_object"}))
        self.assertIn("tools[0].function.name", error(tools=[{"type": "function", "function": {"name": "a b"}}]))
        self.assertIn("tools[0].function.parameters", error(
            tools=[{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"s": {"type": "integer", "not": {"const": 9}}}}}}], tool_choice="required"))
        self.assertIn("tools", error(functions=[tool["function"]]))
        # "none": tools are neither rendered nor parsed.
        status, body, _ = self.chat(tools=self.tools, tool_choice="none", max_tokens=2)
        self.assertEqual(status, 200, body)
        status, plain, _ = self.chat(max_tokens=2)
        self.assertEqual(body["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"])


if __name__ == "__main__":
    unittest.main()
