// Fuzz target for reading tool calls out of generated text (api/tool_calls.h,
// tool_call_scan.h): the input is an answer, read in every family's syntax as
// a whole (parse_tool_calls, use_written_arguments) and as a stream sees it,
// prefix by prefix (scan_tool_calls, generic_reply_so_far). Checks: every
// position the scan reports lies inside the text, a call's arguments stay
// where they began, a streamed reply only grows, and every parsed call's
// arguments (as written, where the scan found them) are a JSON object, as
// clients JSON.parse them.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/tool_call_scan.h"
#include "api/tool_calls.h"
#include "fuzz_target.h"

namespace {

using plimsoll::api::ToolFormat;

void fail(const char* what, ToolFormat format) {
  std::fprintf(stderr, "tool_calls_fuzz: %s (%s)\n", what, plimsoll::api::tool_format_name(format));
  std::abort();
}

void check_stream(ToolFormat format, std::string_view text) {
  std::string reply;
  std::vector<size_t> begins;
  for (size_t n = 0; n <= text.size(); ++n) {
    const std::string_view prefix = text.substr(0, n);
    const auto calls = plimsoll::api::scan_tool_calls(format, prefix);
    for (size_t k = 0; k < calls.size(); ++k) {
      const auto& c = calls[k];
      if (c.args_begin == std::string_view::npos) continue;
      if (c.args_begin > c.args_end || c.args_end > prefix.size()) fail("arguments outside the text", format);
      if (k < begins.size() && begins[k] != c.args_begin) fail("a call's arguments moved", format);
      if (k == begins.size()) begins.push_back(c.args_begin);
    }
    if (format != ToolFormat::kGeneric) continue;
    if (const auto so_far = plimsoll::api::generic_reply_so_far(prefix)) {
      if (so_far->compare(0, reply.size(), reply) != 0) fail("the reply so far shrank or changed", format);
      reply = *so_far;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (ToolFormat format : {ToolFormat::kHermes, ToolFormat::kLlama3Json, ToolFormat::kMistral, ToolFormat::kGeneric}) {
    auto parsed = plimsoll::api::parse_tool_calls(format, text);
    plimsoll::api::use_written_arguments(format, text, &parsed.calls);
    for (const auto& call : parsed.calls) {
      if (!nlohmann::json::parse(call.arguments, nullptr, false).is_object()) fail("arguments that are not an object", format);
    }
    check_stream(format, text);
  }
  return 0;
}

namespace plimsoll::fuzz {

// The byte budget: a parse holds the text's JSON tree (nlohmann's ordered
// tree, under 64 B per byte, twice while calls are copied out) and the
// calls' texts; a prefix scan holds a few copies of the text: 1 MiB fixed
// plus 512 B per input byte.
const TargetInfo& target_info() {
  static const TargetInfo info = [] {
    TargetInfo t;
    t.name = "tool_calls";
    t.seeds = {
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
        "Hi <tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"}</tool_call>\"}}</tool_call><tool_call>{\"name\": \"g\", \"arguments\": {}}",
        "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": [1, 2]}}, {\"name\": \"g\", \"arguments\": {}}]",
        "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"q\": \"a;b\"}}; {\"name\": \"g\", \"parameters\": {}}",
        "{\"tool_calls\": [{\"name\": \"f\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": \"g\", \"parameters\": {}}]}",
        "{\"tool_call\": {\"name\": \"f\", \"arguments\": {}}}",
        "{\"response\": \"Hi \\\"you\\\"\\n\\u00e9\\ud83d\\ude00\"}",
    };
    t.dictionary = {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "\"tool_calls\"", "\"tool_call\"",
                    "\"response\"", "\"name\"", "\"arguments\"", "\"parameters\"", "{", "}", "[", "]", ":", ",", ";",
                    "\"", "\\\"", "\\\\", "\\u", "\\ud83d", "\\ude00", " ", "\n"};
    t.nests = {{"{", "}"}, {"[", "]"}, {"\"", "\""}, {"<tool_call>", "</tool_call>"}};
    t.budget_fixed_bytes = int64_t{1} << 20;
    t.budget_per_input_byte = 512;
    t.max_input_bytes = 2048;
    return t;
  }();
  return info;
}

}  // namespace plimsoll::fuzz
