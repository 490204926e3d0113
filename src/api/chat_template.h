// The chat-template hook: how /v1/chat/completions turns messages into one
// prompt. The server passes the model's template; the fallback is documented.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace plimsoll::api {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", ...
  std::string content;  // text (array-of-parts content joined by the route)
};

// The longest prompt a render may produce: a rendered text longer than this
// could not pass max_input_tokens anyway (build_prompt refuses it by bytes).
// 0: unbounded here (the Jinja renderer's own defaults apply).
struct ChatRenderBudget {
  int64_t max_prompt_bytes = 0;
};

// Renders a conversation, ending where the assistant's reply begins. An error
// (e.g. a role the template rejects, or a render over its budget) is answered with 422.
using ChatTemplateFn = std::function<Result<std::string>(const std::vector<ChatMessage>&, const ChatRenderBudget&)>;

// The most bytes one render under `budget` may take while it runs: its
// held-bytes budget (the output included) plus the output once more for the
// string's growth. What the route reserves from admission's request budget
// before rendering.
int64_t chat_render_reserve_bytes(const ChatRenderBudget& budget);

// "<role>: <content>\n" per message, then "assistant:" — for models without a template.
Result<std::string> default_chat_template(const std::vector<ChatMessage>& messages, const ChatRenderBudget& = {});

// How /v1/chat/completions makes its prompt: the renderer, and whether the
// rendered text gets the tokenizer's special tokens (unset: yes, unless the
// text starts with BOS's text).
struct ChatPromptFormat {
  ChatTemplateFn render = default_chat_template;
  std::optional<bool> add_special;
};

// The model's own Jinja chat template (tokenizer_config.json chat_template or
// GGUF tokenizer.chat_template): rendered with messages, bos_token, eos_token
// and add_generation_prompt=true; raise_exception(msg) is an error (422) with
// the template's message. Its text is encoded with add_special=false, as
// transformers' apply_chat_template(tokenize=True) does. Each render's
// output budget is the request's max_prompt_bytes, its held-bytes budget
// twice that plus 4 MiB (chat_render_limits). Fails (naming `source_name`)
// when the template does not parse.
Result<ChatPromptFormat> model_chat_format(std::string_view source, const std::string& source_name,
                                           std::string bos_token, std::string eos_token);

}  // namespace plimsoll::api
