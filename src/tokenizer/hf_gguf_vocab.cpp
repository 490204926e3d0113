// A GGUF "gpt2" vocabulary (tokenizer.ggml.tokens / merges / token_type / pre)
// as the tokenizer.json it was converted from, so that it runs on the same
// HfTokenizer code: byte-level BPE with the named pre-tokenizer
// (gguf_pre_tokenizers.h).
#include "tokenizer/gguf_pre_tokenizers.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/hf_tokenizer_data.h"

namespace plimsoll {
namespace {

using hf::Json;

Json special_token(const Vocab& vocab, int32_t id) {
  const std::string& piece = vocab.pieces[static_cast<size_t>(id)];
  return {{"id", piece}, {"ids", Json::array({id})}, {"tokens", Json::array({piece})}};
}

// BOS / EOS around a prompt as tokenizer.ggml.add_bos_token / add_eos_token say.
// Without the key, llama.cpp's default for the pre-tokenizer (`add_bos_default`).
Json post_processor(const Vocab& vocab, bool add_bos_default) {
  Json single = Json::array();
  Json specials = Json::object();
  const bool add_bos = vocab.add_bos_in_file ? vocab.add_bos : add_bos_default;
  const bool bos = add_bos && vocab.bos_id >= 0;
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
  PLIMSOLL_ASSIGN(GgufPreTokenizer pre, gguf_pre_tokenizer(vocab.pre, file_name));
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
                   {"ignore_merges", pre.ignore_merges}};
  json["added_tokens"] = std::move(added);
  json["normalizer"] = std::move(pre.normalizer);
  json["pre_tokenizer"] = std::move(pre.pre_tokenizer);
  json["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  json["post_processor"] = post_processor(vocab, pre.add_bos);
  HfTokenizerConfig config;
  if (vocab.bos_id >= 0) config.bos_token = vocab.pieces[static_cast<size_t>(vocab.bos_id)];
  if (vocab.eos_id >= 0) config.eos_token = vocab.pieces[static_cast<size_t>(vocab.eos_id)];
  PLIMSOLL_ASSIGN(auto data, hf::load_tokenizer_data(json, config, file_name + " (tokenizer.ggml.*)"));
  return HfTokenizer(std::move(data));
}

}  // namespace plimsoll
