// libFuzzer target for the chat-template renderer (src/chat): the input is a
// template, then (after the first NUL byte, if any) a message's content. The
// render runs under small budgets; checks: it never crashes (ASan/UBSan
// report UB, overflow and use-after-free), and a successful render keeps to
// its output budget.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);
  const std::string content(split == std::string_view::npos ? std::string_view() : input.substr(split + 1));
  auto parsed = plimsoll::ChatTemplate::parse(source);
  if (!parsed.ok()) return 0;
  plimsoll::ChatRenderLimits limits;
  limits.max_steps = 100'000;
  limits.max_output_bytes = 64 << 10;
  limits.max_held_bytes = 1 << 20;
  plimsoll::ChatRenderInput in;
  in.messages.push_back({{"role", "user"}, {"content", content}});
  in.messages.push_back({{"role", "assistant"}, {"content", "ok"}});
  in.add_generation_prompt = true;
  in.bos_token = "<s>";
  in.eos_token = "</s>";
  const auto out = parsed->render(in, limits);
  if (out.ok() && static_cast<int64_t>(out->size()) > limits.max_output_bytes) std::abort();
  return 0;
}

namespace plimsoll::fuzz {

// The byte budget: the render holds at most max_held_bytes (1 MiB above: its
// output, block and macro text, every string, list and dict it built); 3 MiB
// more for what that meter leaves out (the context: messages and variables,
// the evaluator's frames, allocator rounding). The parsed template and the
// content string grow with the input: 1 KiB per input byte (a syntax node of
// ~100-300 B per one or two template bytes at most).
const TargetInfo& target_info() {
  static const TargetInfo info = [] {
    TargetInfo t;
    t.name = "jinja";
    t.seeds = {
        "",
        "Hello {{ messages[0]['content'] }}",
        "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}</s>{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}",
        "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
        "{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + eos_token }}"
        "{% endif %}{% endfor %}",
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
        "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
        "{% endif %}",
        "{% set ns = namespace(x=0) %}{% for m in messages %}{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x }}",
        "{% macro f(a, b=2) %}{{ a * b }}{% endmacro %}{{ f(3) }}{{ f('ab', 3) }}",
        "{{ messages | map(attribute='content') | join(', ') }}",
        "{{ (messages | length) ~ ' ' ~ (messages | selectattr('role', 'equalto', 'user') | list | length) }}",
        "{% if messages[0].content is string and messages[0].content | trim | length > 0 %}ok{% endif %}",
        "{{ messages[0].content | upper | replace('A', 'b') | tojson }}",
        "{% for i in range(10) %}{{ loop.index }}{% if not loop.last %},{% endif %}{% endfor %}",
        "{{ raise_exception('no system role') if messages[0].role == 'system' }}",
        "{%- for m in messages -%}\n  {{- m.content[1:5] ~ m.content[::-1] -}}\n{%- endfor -%}",
        "{{ {'a': 1, 'b': [1, 2, 3]} | tojson }}{{ [1, 2] + [3] }}{{ 7 // 2 }}{{ 2 ** 10 }}{{ 'x' * 3 }}",
        "{% generation %}{{ messages[-1].content }}{% endgeneration %}",
        "{{ messages[0].content.split(' ') | first }}{{ 'a,b'.split(',') | last }}",
        std::string("{{ messages[0].content }}\0hello world", 37),
        std::string("{% for c in messages[0].content %}{{ c }}{% endfor %}\0{{ x }}", 61),
    };
    t.dictionary = {"{{",      "}}",     "{%",        "%}",       "{#",       "#}",     "{%-",     "-%}",
                    " for ",   " in ",   "endfor",    " if ",     "endif",    "else",   "elif",    " set ",
                    "macro",   "endmacro", "call",    " not ",    " and ",    " or ",   " is ",    "loop.index",
                    "messages", "message", "content", "role",     "|join",    "|tojson", "|length", "|map",
                    "|upper",  "|trim",  "|list",     "range(",   "namespace(", "raise_exception(", "~", "+",
                    "*",       "**",     "//",        "%",        "[",        "]",      "(",       ")",
                    "'",       "\"",    "\\",      "[::-1]",   "[1:]",     ".items()", ".split(", "none",
                    "true",    "false",  "==",        "!=",       "<=",       "|",      ","};
    t.nests = {{"{% for x in [1,2,3] %}", "{% endfor %}"},
               {"{% if true %}", "{% endif %}"},
               {"{{ (", ") }}"},
               {"(", ")"},
               {"[", "]"},
               {"{% macro m() %}", "{% endmacro %}{{ m() }}"},
               {"{% for x in messages %}", "{% endfor %}"}};
    t.budget_fixed_bytes = int64_t{4} << 20;
    t.budget_per_input_byte = 1024;
    t.max_input_bytes = 65536;
    return t;
  }();
  return info;
}

}  // namespace plimsoll::fuzz
