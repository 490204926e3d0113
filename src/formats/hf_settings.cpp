// generation_config.json and tokenizer_config.json -> plain data; token
// fields may be strings or AddedToken objects, chat_template a string or a list.
#include "formats/hf_model.h"

namespace plimsoll {
namespace {

using nlohmann::json;

template <typename T>
Status optional_int(const JsonFile& j, const std::string& field, int64_t min, int64_t max,
                    std::optional<T>* out) {
  if (!j.has(field)) return {};
  PLIMSOLL_ASSIGN(const int64_t v, j.integer(field, min, max));
  *out = static_cast<T>(v);
  return {};
}

Status optional_number(const JsonFile& j, const std::string& field, std::optional<double>* out) {
  if (!j.has(field)) return {};
  PLIMSOLL_ASSIGN(*out, j.number_or(field, 0.0));
  return {};
}

Status optional_bool(const JsonFile& j, const std::string& field, std::optional<bool>* out) {
  if (!j.has(field)) return {};
  PLIMSOLL_ASSIGN(*out, j.boolean_or(field, false));
  return {};
}

Status eos_ids(const JsonFile& j, std::vector<int32_t>* out) {
  if (!j.has("eos_token_id")) return {};
  const json& v = j.root.at("eos_token_id");
  const json list = v.is_array() ? v : json::array({v});
  for (const json& id : list) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return j.field_error("eos_token_id", "must be a token id or a list of them, is " + v.dump());
    }
    out->push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return {};
}

// A special token: "text" or {"content": "text", ...}.
Status token_text(const JsonFile& j, const std::string& field, std::optional<std::string>* out) {
  if (!j.has(field)) return {};
  const json& v = j.root.at(field);
  if (v.is_string()) {
    *out = v.get<std::string>();
  } else if (v.is_object() && v.contains("content") && v.at("content").is_string()) {
    *out = v.at("content").get<std::string>();
  } else {
    return j.field_error(field, "must be a string or an object with a 'content' string");
  }
  return {};
}

Status chat_templates(const JsonFile& j, TokenizerSettings& s) {
  if (!j.has("chat_template")) return {};
  const json& v = j.root.at("chat_template");
  if (v.is_string()) {
    s.chat_template = v.get<std::string>();
    return {};
  }
  if (!v.is_array()) return j.field_error("chat_template", "must be a string or a list of {name, template}");
  for (const json& e : v) {
    if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e.at("name").is_string() ||
        !e.at("template").is_string()) {
      return j.field_error("chat_template", "has an entry that is not {\"name\": ..., \"template\": ...}");
    }
    s.named_chat_templates[e.at("name").get<std::string>()] = e.at("template").get<std::string>();
  }
  auto it = s.named_chat_templates.find("default");
  if (it != s.named_chat_templates.end()) s.chat_template = it->second;
  return {};
}

}  // namespace

Result<GenerationDefaults> generation_defaults_from_json(const JsonFile& j) {
  GenerationDefaults g;
  PLIMSOLL_TRY(optional_bool(j, "do_sample", &g.do_sample));
  PLIMSOLL_TRY(optional_number(j, "temperature", &g.temperature));
  PLIMSOLL_TRY(optional_number(j, "top_p", &g.top_p));
  PLIMSOLL_TRY(optional_number(j, "typical_p", &g.typical_p));
  PLIMSOLL_TRY(optional_number(j, "repetition_penalty", &g.repetition_penalty));
  PLIMSOLL_TRY(optional_int(j, "top_k", 0, INT32_MAX, &g.top_k));
  PLIMSOLL_TRY(optional_int(j, "max_new_tokens", 0, INT32_MAX, &g.max_new_tokens));
  PLIMSOLL_TRY(optional_int(j, "max_length", 0, INT32_MAX, &g.max_length));
  PLIMSOLL_TRY(optional_int(j, "bos_token_id", 0, INT32_MAX, &g.bos_token_id));
  PLIMSOLL_TRY(optional_int(j, "pad_token_id", 0, INT32_MAX, &g.pad_token_id));
  PLIMSOLL_TRY(eos_ids(j, &g.eos_token_ids));
  return g;
}

Result<TokenizerSettings> tokenizer_settings_from_json(const JsonFile& j) {
  TokenizerSettings s;
  PLIMSOLL_TRY(token_text(j, "bos_token", &s.bos_token));
  PLIMSOLL_TRY(token_text(j, "eos_token", &s.eos_token));
  PLIMSOLL_TRY(token_text(j, "unk_token", &s.unk_token));
  PLIMSOLL_TRY(token_text(j, "pad_token", &s.pad_token));
  PLIMSOLL_TRY(optional_bool(j, "add_bos_token", &s.add_bos_token));
  PLIMSOLL_TRY(optional_bool(j, "add_eos_token", &s.add_eos_token));
  // model_max_length is often 1e30 ("no limit") in these files: kept only when an integer.
  if (j.has("model_max_length") && j.root.at("model_max_length").is_number_integer()) {
    PLIMSOLL_TRY(optional_int(j, "model_max_length", 0, INT64_MAX, &s.model_max_length));
  }
  if (j.has("tokenizer_class")) {
    PLIMSOLL_ASSIGN(s.tokenizer_class, j.string("tokenizer_class"));
  }
  PLIMSOLL_TRY(chat_templates(j, s));
  return s;
}

}  // namespace plimsoll
