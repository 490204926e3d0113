#!/usr/bin/env python3
"""Records Python Jinja2's rendering of real chat templates with tools.

The oracle is jinja2 set up as Hugging Face transformers' apply_chat_template
sets it up (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, tojson = json.dumps(ensure_ascii=False), raise_exception), fed
what Plimsoll's /v1/chat/completions passes a template: `tools` as the request's
list, assistant `tool_calls` with their `arguments` parsed from JSON text into
an object, `content` null where the client sent null.

Also records OPENAI_CASES into tests/data/chat_templates/openai_renders.jsonl:
messages as an OpenAI client sends them (content as a list of text parts, tool-call
`arguments` as JSON text with unusual spacing and key order) and jinja2's rendering
of what Plimsoll hands the template for them (`passed`): HF's exact input (the parts
list, the arguments text as sent) where the template renders it as transformers'
users expect, else the parts joined / the arguments parsed (see docs/api.md,
"POST /v1/chat/completions"). test_api ModelChatTest.OpenAiMessagesRenderAsRecorded
sends `request` through /v1/chat/completions and compares.

Also renders SNIPPETS, small templates of the builtins where Python's behaviour is
the reference (str.strip's Unicode whitespace, ...), into
tests/data/chat_templates/python_snippets.jsonl (test_chat: ChatReference).

Writes both files; --check compares instead and exits 1 on a difference, 77 when
jinja2 is not installed (Debian: python3-jinja2).
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
SNIPPETS_OUT = os.path.join(DATA, "chat_templates", "python_snippets.jsonl")
OPENAI_OUT = os.path.join(DATA, "chat_templates", "openai_renders.jsonl")

# name: (template source, variables). Whitespace as Python's str.isspace() has it:
# U+00A0, U+2003, U+3000, U+0085 and U+1680 are stripped, U+FEFF and U+200B are not.
SPACES = "\u00a0\u3000 \u2003\n\u0085\u1680"
SNIPPETS = {
    "trim_unicode_spaces": ("[{{ x | trim }}]", {"x": SPACES + "hello\u2003world" + SPACES}),
    "strip_unicode_spaces": ("[{{ x.strip() }}]", {"x": SPACES + "hi" + SPACES}),
    "lstrip_rstrip": ("[{{ x.lstrip() }}][{{ x.rstrip() }}]", {"x": "\u3000a\u3000"}),
    "strip_keeps_bom_and_zero_width": ("[{{ x | trim }}]", {"x": "\ufeff\u200ba\u200b\ufeff"}),
    "strip_chars_code_points": ("[{{ x.strip('\u00fc\u3000') }}]", {"x": "\u00fc\u3000a\u00fc\u00fc"}),
    "split_on_unicode_spaces": ("{{ x.split() | join('|') }}", {"x": "a\u3000b\u00a0c\u2003 d"}),
    "trim_in_a_chat_turn": ("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}\n{% endfor %}",
                            {"messages": [{"role": "user", "content": "\u3000\u3000Bonjour\u00a0!\u00a0"}]}),
}

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


def snippet_records():
    env = environment()
    for name, (source, context) in SNIPPETS.items():
        record = {"conversation": name, "source": source, "context": context}
        try:
            record["output"] = env.from_string(source).render(**context)
        except jinja2.exceptions.TemplateError as e:
            record["error"] = str(e)
        yield record


def parts(*texts):
    return [{"type": "text", "text": t} for t in texts]


def joined(messages):
    """The messages with each list of text parts joined into one string."""
    return [dict(m, content="".join(p["text"] for p in m["content"])) if isinstance(m.get("content"), list) else m
            for m in messages]


def parsed_arguments(messages):
    """The messages with each tool call's arguments JSON text parsed into an object."""
    out = []
    for m in messages:
        if "tool_calls" in m:
            calls = [dict(c, function=dict(c["function"], arguments=json.loads(c["function"]["arguments"])))
                     for c in m["tool_calls"]]
            m = dict(m, tool_calls=calls)
        out.append(m)
    return out


# Arguments as a client sends them back: the model's own text, spacing and key order kept.
ARGUMENTS = "{\"unit\":\"celsius\",  \"city\": \"Z\u00fcrich\"}"
TOOL_TURN = [{"role": "user", "content": "Weather in Z\u00fcrich?"},
             {"role": "assistant", "content": None,
              "tool_calls": [call("call12345", "get_weather", ARGUMENTS)]},
             {"role": "tool", "tool_call_id": "call12345", "name": "get_weather", "content": "{\"temperature\": 21}"}]
PARTS_TURN = [{"role": "system", "content": parts("Be brief. ", " Answer in French.")},
              {"role": "user", "content": parts("  Hello ", "\n\nworld  ")},
              {"role": "assistant", "content": parts("Bonjour")},
              {"role": "user", "content": parts("Again", "  please")}]

# name: (template, bos, eos, request messages, tools, what Plimsoll passes the template)
OPENAI_CASES = {
    "gemma3_content_parts": ("gemma3", PARTS_TURN, None, lambda m: m),
    "gemma3_string_content": ("gemma3", joined(PARTS_TURN), None, lambda m: m),
    "llama3_content_parts_joined": ("llama3", PARTS_TURN, None, joined),
    "qwen3_content_parts_joined": ("qwen3", PARTS_TURN, None, joined),
    "qwen3_arguments_as_sent": ("qwen3", TOOL_TURN, [WEATHER], lambda m: m),
    "qwen2_5_arguments_parsed": ("qwen2_5", TOOL_TURN, [WEATHER], parsed_arguments),
    "mistral_nemo_arguments_parsed": ("mistral_nemo", TOOL_TURN, [WEATHER], parsed_arguments),
}
OPENAI_TEMPLATES = {  # name: (file, bos_token, eos_token)
    "gemma3": (os.path.join(DATA, "chat_templates", "gemma3.jinja"), "<bos>", "<eos>"),
    "llama3": (os.path.join(DATA, "chat_templates", "llama3.jinja"), "<|begin_of_text|>", "<|eot_id|>"),
    "qwen3": (os.path.join(DATA, "tool_templates", "qwen3.jinja"), "", "<|im_end|>"),
    "qwen2_5": TEMPLATES["qwen2_5"],
    "mistral_nemo": TEMPLATES["mistral_nemo"],
}


def openai_records():
    env = environment()
    for name, (template_name, messages, tools, passed) in OPENAI_CASES.items():
        path, bos, eos = OPENAI_TEMPLATES[template_name]
        with open(path, encoding="utf-8") as f:
            template = env.from_string(f.read())
        context = {"messages": passed(messages), "tools": tools, "add_generation_prompt": True,
                   "bos_token": bos, "eos_token": eos, "date_string": "26 Jul 2024"}
        record = {"case": name, "template": template_name, "bos_token": bos, "eos_token": eos,
                  "request": {"messages": messages, "tools": tools}, "passed": context["messages"]}
        record["output"] = template.render(**context)
        # What transformers' apply_chat_template renders for the request as sent (no joining, no parsing).
        try:
            record["transformers"] = template.render(**dict(context, messages=messages))
        except (jinja2.exceptions.TemplateError, TypeError) as e:
            record["transformers_error"] = type(e).__name__ + ": " + str(e)
        yield record


def main():
    failed = 0
    for path, recs in ((OUT, records()), (SNIPPETS_OUT, snippet_records()), (OPENAI_OUT, openai_records())):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
        if "--check" not in sys.argv:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            continue
        with open(path, encoding="utf-8") as f:
            if f.read() != text:
                print("record_tool_renders: jinja2's renderings differ from " + path, file=sys.stderr)
                failed = 1
                continue
        print("record_tool_renders: " + path + " matches jinja2 " + jinja2.__version__)
    return failed


if __name__ == "__main__":
    sys.exit(main())
