// load_hf_model: a Hugging Face folder (config.json, safetensors weights,
// optional generation_config.json and tokenizer_config.json) -> LoadedModel.
#include "formats/hf_model.h"

#include <filesystem>

namespace plimsoll {
namespace {

std::string join(const std::string& dir, const char* file) {
  return (std::filesystem::path(dir) / file).string();
}

// An optional JSON file: nullopt when absent, its error when present and bad.
Result<std::optional<JsonFile>> optional_json(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<JsonFile>();
  PLIMSOLL_ASSIGN(JsonFile f, read_json_file(path));
  return std::optional<JsonFile>(std::move(f));
}

Status read_settings(const std::string& dir, LoadedModel& m) {
  PLIMSOLL_ASSIGN(const auto gen, optional_json(join(dir, "generation_config.json")));
  if (gen) {
    PLIMSOLL_ASSIGN(m.generation_defaults, generation_defaults_from_json(*gen));
  }
  PLIMSOLL_ASSIGN(const auto tok, optional_json(join(dir, "tokenizer_config.json")));
  if (tok) {
    PLIMSOLL_ASSIGN(m.tokenizer_settings, tokenizer_settings_from_json(*tok));
  }
  return {};
}

// The folder's name; for a snapshot of the Hugging Face cache
// (.../models--org--name/snapshots/<commit>) the repo id, "org/name".
std::string folder_model_name(const std::string& dir) {
  std::filesystem::path p(dir);
  if (p.filename().empty()) p = p.parent_path();
  const std::string repo = p.parent_path().parent_path().filename().string();
  if (p.parent_path().filename() != "snapshots" || repo.rfind("models--", 0) != 0) return p.filename().string();
  std::string id = repo.substr(8);
  const size_t sep = id.find("--");
  if (sep == std::string::npos) return id;
  return id.substr(0, sep).append(1, '/').append(id.substr(sep + 2));  // (not replace: GCC 12 -Wrestrict)
}

// Adds the Hugging Face name to an error about a tensor "'<gguf name>'".
Status with_hf_names(const ModelConfig& c, Status s) {
  if (s.ok()) return s;
  const std::string& msg = s.error().message;
  const size_t open = msg.find("tensor '");
  const size_t close = open == std::string::npos ? open : msg.find('\'', open + 8);
  if (close == std::string::npos) return s;
  const std::string hf = hf_tensor_name(c, msg.substr(open + 8, close - open - 8));
  if (hf.empty()) return s;
  return Error{s.error().code, msg + " (Hugging Face name '" + hf + "')"};
}

}  // namespace

Result<LoadedModel> load_hf_model(const std::string& dir) {
  LoadedModel m;
  m.format = ModelFormat::kHfSafetensors;
  m.path = dir;
  PLIMSOLL_ASSIGN(const JsonFile config, read_json_file(join(dir, "config.json")));
  PLIMSOLL_ASSIGN(m.config, config_from_hf(config));
  m.config.name = folder_model_name(dir);
  PLIMSOLL_ASSIGN(SafetensorsSet set, load_safetensors_dir(dir));
  PLIMSOLL_TRY(add_hf_tensors(m.config, std::move(set), m.tensors));
  if (!m.config.tied_embeddings && !m.tensors.find("output.weight")) {
    return make_error(ErrorCode::kInvalidFile,
                      dir + ": missing tensor 'lm_head.weight' (config.json: tie_word_embeddings is false)");
  }
  PLIMSOLL_TRY(with_hf_names(m.config, validate_decoder_tensors(m.config, m.tensors, dir)));
  PLIMSOLL_TRY(read_settings(dir, m));
  return m;
}

}  // namespace plimsoll
