// Building an HfTokenizer from tokenizer.json (+ tokenizer_config.json):
// each top-level section checked and turned into its component.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/hf_tokenizer_data.h"

namespace plimsoll {
namespace hf {
namespace {

Status check_top_level(const Json& json, const std::string& where) {
  if (!json.is_object()) return make_error(ErrorCode::kInvalidFile, where + "not a JSON object");
  // Truncation and padding only matter for batched training inputs; we ignore them.
  return Status::ok_status();
}

Status load_components(const Json& json, const std::string& where, TokenizerData* data) {
  if (const Json* n = find_member(json, "normalizer")) {
    PLIMSOLL_ASSIGN(data->normalizer, make_normalizer(*n, field_name(where, "normalizer")));
  }
  if (const Json* p = find_member(json, "pre_tokenizer")) {
    PLIMSOLL_ASSIGN(data->pre_tokenizer, make_pre_tokenizer(*p, field_name(where, "pre_tokenizer")));
  }
  if (const Json* d = find_member(json, "decoder")) {
    PLIMSOLL_ASSIGN(data->decoder, make_decoder(*d, field_name(where, "decoder")));
  }
  if (const Json* p = find_member(json, "post_processor")) {
    PLIMSOLL_ASSIGN(data->wrap, parse_post_processor(*p, field_name(where, "post_processor")));
  }
  return Status::ok_status();
}

// Added tokens may extend the vocab, within token_id_limit of the tokens the file defines.
Status check_added_ids(const TokenizerData& data, const std::string& where) {
  const int64_t defined = static_cast<int64_t>(data.model.tokens().size() + data.added_tokens.size());
  const int64_t limit = token_id_limit(defined);
  for (const AddedToken& token : data.added_tokens) {
    if (token.id >= limit) {
      return invalid_field(where, "id", std::to_string(token.id) + " of '" + token.content + "' is not below " +
                                            std::to_string(limit) + " (the " + std::to_string(defined) +
                                            " tokens defined + " + std::to_string(kMaxTokenIdGap) + ")");
    }
  }
  return Status::ok_status();
}

void index_added_tokens(TokenizerData* data) {
  std::vector<AddedToken> raw;
  std::vector<AddedToken> normalized;
  for (const AddedToken& token : data->added_tokens) {
    data->model.set_token(token.id, token.content);
    if (!token.normalized || data->normalizer == nullptr) {
      raw.push_back(token);
    } else {
      AddedToken copy = token;
      copy.content = data->normalizer->normalize(token.content);
      if (!copy.content.empty()) normalized.push_back(std::move(copy));
    }
  }
  const size_t size = data->model.tokens().size();
  data->special.assign(size, false);
  data->added.assign(size, false);
  for (const AddedToken& token : data->added_tokens) {
    data->added[static_cast<size_t>(token.id)] = true;
    data->special[static_cast<size_t>(token.id)] = token.special;
  }
  for (const std::string& token : data->model.tokens()) {
    data->longest_token_bytes = std::max(data->longest_token_bytes, static_cast<int64_t>(token.size()));
  }
  data->raw_added = AddedTokenSplitter(std::move(raw));
  data->normalized_added = AddedTokenSplitter(std::move(normalized));
}

int32_t lookup(const TokenizerData& data, const std::string& token) {
  for (const AddedToken& added : data.added_tokens) {
    if (added.content == token) return added.id;
  }
  return data.model.token_id(token).value_or(-1);
}

Status check_wrap_ids(const TokenizerData& data, const std::string& where) {
  const auto size = static_cast<int32_t>(data.model.tokens().size());
  for (const auto* side : {&data.wrap.prefix_ids, &data.wrap.suffix_ids}) {
    for (const int32_t id : *side) {
      if (id < 0 || id >= size) {
        return invalid_field(where, "post_processor", "uses id " + std::to_string(id) +
                                                          " outside the vocab");
      }
    }
  }
  return Status::ok_status();
}

void resolve_bos_eos(TokenizerData* data) {
  data->bos_id = data->config.bos_token.empty() ? -1 : lookup(*data, data->config.bos_token);
  if (data->bos_id < 0 && data->wrap.prefix_ids.size() == 1) data->bos_id = data->wrap.prefix_ids[0];
  data->eos_id = data->config.eos_token.empty() ? -1 : lookup(*data, data->config.eos_token);
  if (data->eos_id < 0 && data->wrap.suffix_ids.size() == 1) data->eos_id = data->wrap.suffix_ids[0];
}

Result<std::string> special_token_name(const Json& config, std::string_view key,
                                       const std::string& where) {
  const Json* value = find_member(config, key);
  if (value == nullptr) return std::string();
  if (value->is_string()) return value->get<std::string>();
  return get_string(*value, "content", field_name(where, key));
}

Result<std::string> chat_template_of(const Json& config, const std::string& where) {
  const Json* value = find_member(config, "chat_template");
  if (value == nullptr) return std::string();
  if (value->is_string()) return value->get<std::string>();
  if (!value->is_array()) return invalid_field(where, "chat_template", "is not a string or list");
  for (const Json& entry : *value) {
    const Json* name = find_member(entry, "name");
    const Json* text = find_member(entry, "template");
    if (name != nullptr && *name == "default" && text != nullptr && text->is_string()) {
      return text->get<std::string>();
    }
  }
  // Only named templates (e.g. "tool_use"), none for plain chats: no template,
  // rather than a tokenizer that cannot load.
  return std::string();
}

// add_bos_token / add_eos_token of tokenizer_config.json, when given, decide
// whether BOS leads and EOS ends encode(text, true).
void apply_add_flags(TokenizerData* data) {
  auto set = [](std::vector<int32_t>& side, int32_t id, bool want, bool front) {
    if (id < 0) return;
    std::erase(side, id);
    if (want) side.insert(front ? side.begin() : side.end(), id);
  };
  if (data->config.add_bos_token) set(data->wrap.prefix_ids, data->bos_id, *data->config.add_bos_token, true);
  if (data->config.add_eos_token) set(data->wrap.suffix_ids, data->eos_id, *data->config.add_eos_token, false);
}

Result<std::optional<bool>> optional_flag(const Json& config, std::string_view key, const std::string& where) {
  const Json* value = find_member(config, key);
  if (value == nullptr) return std::optional<bool>();
  if (!value->is_boolean()) return invalid_field(where, key, "is not true or false");
  return std::optional<bool>(value->get<bool>());
}

}  // namespace

Result<std::shared_ptr<const TokenizerData>> load_tokenizer_data(const Json& json,
                                                                 const HfTokenizerConfig& config,
                                                                 const std::string& file_name) {
  const std::string where = file_name + ": ";
  PLIMSOLL_TRY(check_top_level(json, where));
  auto data = std::make_shared<TokenizerData>();
  data->config = config;
  const Json* model = find_member(json, "model");
  if (model == nullptr) return invalid_field(where, "model", "is missing");
  PLIMSOLL_ASSIGN(data->model, HfBpe::load(*model, field_name(where, "model")));
  PLIMSOLL_TRY(load_components(json, where, data.get()));
  if (const Json* added = find_member(json, "added_tokens")) {
    PLIMSOLL_ASSIGN(data->added_tokens, parse_added_tokens(*added, field_name(where, "added_tokens")));
    PLIMSOLL_TRY(check_added_ids(*data, field_name(where, "added_tokens")));
  }
  index_added_tokens(data.get());
  PLIMSOLL_TRY(check_wrap_ids(*data, where));
  resolve_bos_eos(data.get());
  apply_add_flags(data.get());
  return std::shared_ptr<const TokenizerData>(std::move(data));
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, path + ": cannot open");
  std::error_code ec;
  const auto size_bytes = std::filesystem::file_size(path, ec);
  if (!ec && size_bytes > static_cast<uintmax_t>(kMaxTokenizerFileBytes)) {
    return make_error(ErrorCode::kInvalidFile, path + ": " + std::to_string(size_bytes) + " bytes, more than the " +
                                                   std::to_string(kMaxTokenizerFileBytes) +
                                                   " a tokenizer file may have");
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(ErrorCode::kIo, path + ": read failed");
  return text.str();
}

}  // namespace hf

Result<HfTokenizerConfig> parse_hf_tokenizer_config(std::string_view json_text,
                                                    const std::string& file_name) {
  PLIMSOLL_ASSIGN(const hf::Json json, hf::parse_json(json_text, file_name));
  const std::string where = file_name + ": ";
  if (!json.is_object()) return make_error(ErrorCode::kInvalidFile, where + "not a JSON object");
  HfTokenizerConfig config;
  PLIMSOLL_ASSIGN(config.bos_token, hf::special_token_name(json, "bos_token", where));
  PLIMSOLL_ASSIGN(config.eos_token, hf::special_token_name(json, "eos_token", where));
  PLIMSOLL_ASSIGN(config.chat_template, hf::chat_template_of(json, where));
  PLIMSOLL_ASSIGN(config.add_bos_token, hf::optional_flag(json, "add_bos_token", where));
  PLIMSOLL_ASSIGN(config.add_eos_token, hf::optional_flag(json, "add_eos_token", where));
  PLIMSOLL_ASSIGN(const auto cleanup, hf::optional_flag(json, "clean_up_tokenization_spaces", where));
  config.clean_up_tokenization_spaces = cleanup.value_or(false);
  return config;
}

Result<HfTokenizer> HfTokenizer::from_json(std::string_view tokenizer_json,
                                           const HfTokenizerConfig& config,
                                           const std::string& file_name) {
  PLIMSOLL_ASSIGN(const hf::Json json, hf::parse_json(tokenizer_json, file_name));
  PLIMSOLL_ASSIGN(auto data, hf::load_tokenizer_data(json, config, file_name));
  return HfTokenizer(std::move(data));
}

Result<HfTokenizer> HfTokenizer::load_file(const std::string& path, const std::string& config_path) {
  HfTokenizerConfig config;
  if (!config_path.empty()) {
    PLIMSOLL_ASSIGN(const std::string config_text, hf::read_text_file(config_path));
    PLIMSOLL_ASSIGN(config, parse_hf_tokenizer_config(config_text, config_path));
  }
  PLIMSOLL_ASSIGN(const std::string text, hf::read_text_file(path));
  return from_json(text, config, path);
}

Result<HfTokenizer> HfTokenizer::load_dir(const std::string& dir) {
  const std::string config_path = dir + "/tokenizer_config.json";
  const bool has_config = static_cast<bool>(std::ifstream(config_path));
  return load_file(dir + "/tokenizer.json", has_config ? config_path : "");
}

}  // namespace plimsoll
