// Plain data from a Hugging Face model folder that is not the model itself
// (formats/ reads it): generation_config.json defaults and tokenizer_config.json fields.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace plimsoll {

// generation_config.json: what the model's authors set as generation defaults
// (for the server to use when a request leaves a parameter out). Absent = unset.
struct GenerationDefaults {
  std::optional<bool> do_sample;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<double> typical_p;
  std::optional<double> repetition_penalty;
  std::optional<int64_t> top_k;
  std::optional<int64_t> max_new_tokens;
  std::optional<int64_t> max_length;     // prompt + new tokens
  std::optional<int32_t> bos_token_id;
  std::optional<int32_t> pad_token_id;
  std::vector<int32_t> eos_token_ids;    // "eos_token_id": an id or a list of ids
};

// tokenizer_config.json: the fields the tokenizer and chat templates need.
// Token fields may be strings or AddedToken objects in the file; here the text.
struct TokenizerSettings {
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::optional<std::string> unk_token;
  std::optional<std::string> pad_token;
  std::optional<bool> add_bos_token;
  std::optional<bool> add_eos_token;
  std::optional<int64_t> model_max_length;
  std::optional<std::string> chat_template;                // the default template
  std::map<std::string, std::string> named_chat_templates; // a list of {name, template}
  std::optional<std::string> tokenizer_class;
};

}  // namespace plimsoll
