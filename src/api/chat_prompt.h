// The chat-template hook: how /v1/chat/completions turns messages into one
// prompt. The server passes the model's template; the fallback is documented.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/tool_calls.h"
#include "chat/chat_template.h"
#include "core/result.h"

namespace plimsoll::api {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;  // text (array-of-parts content joined by the route)
  bool content_null = false;   // sent as null (an assistant turn with tool_calls): the template sees none
  OrderedJson tool_fields;     // an object of tool_calls (arguments as sent), tool_call_id, name; null: none
  // content sent as a list of parts: [{"type": "text", "text"}, ...], what templates that
  // iterate content get (null: sent as a string; cleared by whoever rewrites `content`).
  OrderedJson content_parts;
};

// A tool call's `arguments` as templates that print objects with tojson want them:
// JSON text of an object parsed (as vLLM does); anything else unchanged.
OrderedJson parsed_arguments(const OrderedJson& arguments);

// The longest prompt a render may produce: a rendered text longer than this
// could not pass max_input_tokens anyway (build_prompt refuses it by bytes).
// 0: unbounded here (the Jinja renderer's own defaults apply).
struct ChatRenderBudget {
  int64_t max_prompt_bytes = 0;
};

// Renders a conversation, ending where the assistant's reply begins, with
// `tools` (the request's list; null: none) as transformers passes them. An
// error (e.g. a role the template rejects, or a render over its budget) is answered with 422.
using ChatTemplateFn = std::function<Result<std::string>(const std::vector<ChatMessage>&, const ChatRenderBudget&,
                                                         const OrderedJson& tools)>;

// The most bytes one render under `budget` may take while it runs: its
// held-bytes budget (the output included) plus the output once more for the
// string's growth. What the route reserves from admission's request budget
// before rendering.
int64_t chat_render_reserve_bytes(const ChatRenderBudget& budget);

// "<role>: <content>\n" per message, then "assistant:" — for models without a template.
// Tools are not rendered (it has no tool-call syntax).
Result<std::string> default_chat_template(const std::vector<ChatMessage>& messages, const ChatRenderBudget& = {},
                                          const OrderedJson& tools = {});

// How /v1/chat/completions makes its prompt: the renderer, and whether the
// rendered text gets the tokenizer's special tokens (unset: yes, unless the
// text starts with BOS's text).
struct ChatPromptFormat {
  ChatTemplateFn render = default_chat_template;
  std::optional<bool> add_special;
  ToolFormat tool_format = ToolFormat::kNone;  // the template's tool-call syntax (detect_tool_format)
};

// The model's own Jinja chat template (tokenizer_config.json chat_template or
// GGUF tokenizer.chat_template): rendered with messages, bos_token, eos_token
// add_generation_prompt=true and tools. Content sent as text parts reaches the
// template as that list when the template renders a list of text parts as it renders
// the same text as a string (Gemma 3, which trims each part), else joined; tool-call
// arguments sent as JSON text reach it as sent when the template prints such text
// unchanged (Qwen3's `is string` test), else parsed (parsed_arguments). Both are
// probed once here (template_traits); raise_exception(msg) is an error (422) with
// the template's message. Its text is encoded with add_special=false, as
// transformers' apply_chat_template(tokenize=True) does. Each render's
// output budget is the request's max_prompt_bytes, its held-bytes budget
// twice that plus 4 MiB (chat_render_limits). Fails (naming `source_name`)
// when the template does not parse.
Result<ChatPromptFormat> model_chat_format(std::string_view source, const std::string& source_name,
                                           std::string bos_token, std::string eos_token);

}  // namespace plimsoll::api
