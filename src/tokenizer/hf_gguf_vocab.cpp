// A GGUF "gpt2" vocabulary (tokenizer.ggml.tokens / merges / token_type / pre)
// as the tokenizer.json it was converted from, so that it runs on the same
// HfTokenizer code: byte-level BPE with the named pre-tokenizer's regex.
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/hf_tokenizer_data.h"

namespace plimsoll {
namespace {

using hf::Json;

// The split regexes of the pre-tokenizers llama.cpp names in tokenizer.ggml.pre,
// as the models' tokenizer.json files write them.
constexpr const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

Json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", use_regex}};
}

Json split_then_byte_level(const char* regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           Json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                        byte_level(false)})}};
}

// pre_tokenizer (and normalizer) of tokenizer.json for a tokenizer.ggml.pre name.
Status add_pre_tokenizer(const std::string& pre, const std::string& file_name, Json* json) {
  if (pre == "default" || pre == "gpt2" || pre.empty()) {
    (*json)["pre_tokenizer"] = byte_level(true);
  } else if (pre == "llama-bpe" || pre == "llama3") {
    (*json)["pre_tokenizer"] = split_then_byte_level(kLlama3Regex);
  } else if (pre == "qwen2") {
    (*json)["normalizer"] = {{"type", "NFC"}};
    (*json)["pre_tokenizer"] = split_then_byte_level(kQwen2Regex);
  } else {
    return make_error(ErrorCode::kUnsupported,
                      file_name + ": tokenizer.ggml.pre '" + pre +
                          "' is not supported (default, gpt2, llama-bpe, llama3, qwen2)");
  }
  return Status::ok_status();
}

Json special_token(const Vocab& vocab, int32_t id) {
  const std::string& piece = vocab.pieces[static_cast<size_t>(id)];
  return {{"id", piece}, {"ids", Json::array({id})}, {"tokens", Json::array({piece})}};
}

// BOS / EOS around a prompt as tokenizer.ggml.add_bos_token / add_eos_token say.
Json post_processor(const Vocab& vocab) {
  Json single = Json::array();
  Json specials = Json::object();
  const bool bos = vocab.add_bos && vocab.bos_id >= 0;
  const bool eos = vocab.add_eos && vocab.eos_id >= 0;
  if (bos) {
    single.push_back({{"SpecialToken", {{"id", vocab.pieces[static_cast<size_t>(vocab.bos_id)]}, {"type_id", 0}}}});
    specials[vocab.pieces[static_cast<size_t>(vocab.bos_id)]] = special_token(vocab, vocab.bos_id);
  }
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) {
    single.push_back({{"SpecialToken", {{"id", vocab.pieces[static_cast<size_t>(vocab.eos_id)]}, {"type_id", 0}}}});
    specials[vocab.pieces[static_cast<size_t>(vocab.eos_id)]] = special_token(vocab, vocab.eos_id);
  }
  return {{"type", "TemplateProcessing"}, {"single", single}, {"special_tokens", specials}};
}

}  // namespace

Result<HfTokenizer> HfTokenizer::from_gguf_vocab(const Vocab& vocab, const std::string& file_name) {
  if (vocab.model != "gpt2") {
    return make_error(ErrorCode::kInvalidArgument,
                      file_name + ": tokenizer.ggml.model '" + vocab.model + "' is not a byte-level BPE ('gpt2')");
  }
  Json json = Json::object();
  Json token_ids = Json::object();
  Json added = Json::array();
  for (size_t id = 0; id < vocab.pieces.size(); ++id) {
    const std::string& piece = vocab.pieces[id];
    const TokenType type = id < vocab.types.size() ? vocab.types[id] : TokenType::kNormal;
    // A repeated piece keeps its first id, as a tokenizer.json vocab could only hold one.
    if (!token_ids.contains(piece)) token_ids[piece] = static_cast<int64_t>(id);
    if (type == TokenType::kControl || type == TokenType::kUserDefined) {
      added.push_back({{"id", static_cast<int64_t>(id)}, {"content", piece},
                       {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", type == TokenType::kControl}});
    }
  }
  json["model"] = {{"type", "BPE"}, {"vocab", std::move(token_ids)}, {"merges", vocab.merges},
                   {"ignore_merges", vocab.pre == "llama-bpe" || vocab.pre == "llama3"}};
  json["added_tokens"] = std::move(added);
  PLIMSOLL_TRY(add_pre_tokenizer(vocab.pre, file_name, &json));
  json["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  json["post_processor"] = post_processor(vocab);
  HfTokenizerConfig config;
  if (vocab.bos_id >= 0) config.bos_token = vocab.pieces[static_cast<size_t>(vocab.bos_id)];
  if (vocab.eos_id >= 0) config.eos_token = vocab.pieces[static_cast<size_t>(vocab.eos_id)];
  PLIMSOLL_ASSIGN(auto data, hf::load_tokenizer_data(json, config, file_name + " (tokenizer.ggml.*)"));
  return HfTokenizer(std::move(data));
}

}  // namespace plimsoll
