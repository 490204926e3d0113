#!/usr/bin/env python3
"""Records Python Jinja2's rendering of real chat templates with tools.

The oracle is jinja2 set up as Hugging Face transformers' apply_chat_template
sets it up (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, tojson = json.dumps(ensure_ascii=False), raise_exception), fed
what Plimsoll's /v1/chat/completions passes a template: `tools` as the request's
list, assistant `tool_calls` with their `arguments` parsed from JSON text into
an object, `content` null where the client sent null.

Writes tests/data/tool_templates/renders.jsonl; --check compares instead and
exits 1 on a difference, 77 when jinja2 is not installed (Debian: python3-jinja2).
"""
import json
import os
import sys

try:
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("record_tool_renders: jinja2 is not installed (apt-get install python3-jinja2)", file=sys.stderr)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
OUT = os.path.join(DATA, "tool_templates", "renders.jsonl")

TEMPLATES = {  # name: (file, bos_token, eos_token)
    "qwen2_5": (os.path.join(DATA, "chat_templates", "qwen2_5.jinja"), "", "<|im_end|>"),
    "llama3_2": (os.path.join(DATA, "tool_templates", "llama3_2.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
    "mistral_nemo": (os.path.join(DATA, "tool_templates", "mistral_nemo.jinja"), "<s>", "</s>"),
}


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Zürich"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time now",
    "parameters": {"type": "object", "properties": {}}}}


def call(id_, name, arguments):
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATIONS = {
    "tools_question": ([{"role": "user", "content": "What is the weather in Paris?"}], [WEATHER, TIME]),
    "system_tools_question": ([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Weather in Zürich?"}], [WEATHER]),
    "call_and_result": ([{"role": "user", "content": "What is the weather in Paris?"},
                         {"role": "assistant", "content": None,
                          "tool_calls": [call("call12345", "get_weather", {"city": "Paris", "unit": "celsius"})]},
                         {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                          "content": "{\"temperature\": 21}"}], [WEATHER]),
    "no_tools": ([{"role": "user", "content": "Hello!"}], None),
}


def records():
    env = environment()
    for name, (path, bos, eos) in sorted(TEMPLATES.items()):
        with open(path, encoding="utf-8") as f:
            template = env.from_string(f.read())
        for conversation, (messages, tools) in CONVERSATIONS.items():
            context = {"messages": messages, "tools": tools, "add_generation_prompt": True,
                       "bos_token": bos, "eos_token": eos, "date_string": "26 Jul 2024"}
            record = {"template": name, "conversation": conversation, "context": context}
            try:
                record["output"] = template.render(**context)
            except jinja2.exceptions.TemplateError as e:
                record["error"] = str(e)
            yield record


def main():
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records())
    if "--check" in sys.argv:
        with open(OUT, encoding="utf-8") as f:
            if f.read() != text:
                print("record_tool_renders: jinja2's renderings differ from " + OUT, file=sys.stderr)
                return 1
        print("record_tool_renders: " + OUT + " matches jinja2 " + jinja2.__version__)
        return 0
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
