// load_model_tokenizer: which tokenizer file wins, and the chat-template
// fields that travel with it.
#include "tokenizer/tokenizer_loading.h"

#include <filesystem>
#include <fstream>

#include "formats/gguf.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece.h"

namespace plimsoll {
namespace {

namespace fs = std::filesystem;

bool is_tokenizer_json(const std::string& path) {
  if (fs::path(path).extension() == ".json") return true;
  std::ifstream in(path, std::ios::binary);
  char c = 0;
  while (in.get(c)) {
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c == '{';
  }
  return false;
}

std::string sibling(const std::string& path, const char* name) {
  return (fs::path(path).parent_path() / name).string();
}

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, path + ": cannot open");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// tokenizer.json (+ the tokenizer_config.json beside it) -> HfTokenizer and its chat fields.
Result<ModelTokenizer> load_json_tokenizer(const std::string& path) {
  const std::string config_path = sibling(path, "tokenizer_config.json");
  PLIMSOLL_ASSIGN(HfTokenizer hf, HfTokenizer::load_file(path, exists(config_path) ? config_path : ""));
  ModelTokenizer out;
  out.source = path;
  const HfTokenizerConfig& config = hf.config();
  if (!config.chat_template.empty()) {
    out.chat_template = config.chat_template;
    out.chat_template_source = config_path + ": chat_template";
  } else if (const std::string jinja = sibling(path, "chat_template.jinja"); exists(jinja)) {
    PLIMSOLL_ASSIGN(out.chat_template, read_text(jinja));
    out.chat_template_source = jinja;
  }
  out.bos_token = config.bos_token;
  out.eos_token = config.eos_token;
  out.tokenizer = std::make_unique<HfTokenizer>(std::move(hf));
  return out;
}

Result<ModelTokenizer> load_vocab_tokenizer(const Vocab& vocab, const std::string& file_name) {
  ModelTokenizer out;
  PLIMSOLL_ASSIGN(out.tokenizer, tokenizer_from_vocab(vocab, file_name));
  out.source = file_name + " (" + vocab.model + " vocabulary)";
  return out;
}

Result<GgufFile> read_gguf_header(const std::string& path) {
  PLIMSOLL_ASSIGN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const std::span<const std::byte> bytes(file->data(), static_cast<size_t>(file->size_bytes()));
  if (!has_gguf_magic(bytes)) return make_error(ErrorCode::kInvalidArgument, path + ": not a GGUF file");
  return parse_gguf(*file);
}

// A GGUF's vocabulary and chat template.
Result<ModelTokenizer> load_gguf_tokenizer(const std::string& path) {
  PLIMSOLL_ASSIGN(const GgufFile g, read_gguf_header(path));
  PLIMSOLL_ASSIGN(const std::optional<Vocab> vocab, vocab_from_gguf(g));
  if (!vocab) return make_error(ErrorCode::kNotFound, path + ": has no tokenizer.ggml.tokens");
  PLIMSOLL_ASSIGN(ModelTokenizer out, load_vocab_tokenizer(*vocab, path));
  if (g.find("tokenizer.chat_template")) {
    PLIMSOLL_ASSIGN(out.chat_template, g.get_string("tokenizer.chat_template"));
    out.chat_template_source = path + ": tokenizer.chat_template";
  }
  return out;
}

bool has_gguf_magic_at(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

// bos/eos strings from the tokenizer's own ids when nothing named them.
void fill_bos_eos_strings(ModelTokenizer* out) {
  const TextTokenizer& tok = *out->tokenizer;
  if (out->bos_token.empty() && tok.bos_id() >= 0) out->bos_token = std::string(tok.token(tok.bos_id()));
  if (out->eos_token.empty() && tok.eos_id() >= 0) out->eos_token = std::string(tok.token(tok.eos_id()));
}

}  // namespace

Result<ModelTokenizer> load_tokenizer_alone(const std::string& path) {
  ModelTokenizer out;
  if (is_tokenizer_json(path)) {
    PLIMSOLL_ASSIGN(out, load_json_tokenizer(path));
  } else if (has_gguf_magic_at(path)) {
    PLIMSOLL_ASSIGN(out, load_gguf_tokenizer(path));
  } else {
    PLIMSOLL_ASSIGN(const Vocab vocab, load_vocab(path));  // llama2.c tokenizer.bin
    PLIMSOLL_ASSIGN(out, load_vocab_tokenizer(vocab, path));
  }
  fill_bos_eos_strings(&out);
  return out;
}

bool is_tokenizer_file(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  if (is_tokenizer_json(path)) return true;
  if (!has_gguf_magic_at(path)) return false;
  const Result<GgufFile> g = read_gguf_header(path);
  return g.ok() && g->tensors.empty();
}

Result<std::unique_ptr<TextTokenizer>> tokenizer_from_vocab(const Vocab& vocab, const std::string& file_name) {
  if (vocab.model == "gpt2") {
    PLIMSOLL_ASSIGN(HfTokenizer hf, HfTokenizer::from_gguf_vocab(vocab, file_name));
    return std::unique_ptr<TextTokenizer>(std::make_unique<HfTokenizer>(std::move(hf)));
  }
  if (vocab.model == "bert") {
    PLIMSOLL_ASSIGN(WordPieceTokenizer wpm, WordPieceTokenizer::create(vocab, file_name));
    return std::unique_ptr<TextTokenizer>(std::make_unique<WordPieceTokenizer>(std::move(wpm)));
  }
  auto tokenizer = Tokenizer::create(vocab);
  if (!tokenizer) return tokenizer.error().with_context(file_name);
  return std::unique_ptr<TextTokenizer>(std::make_unique<Tokenizer>(std::move(tokenizer).value()));
}

Result<ModelTokenizer> load_model_tokenizer(const LoadedModel& model, const std::string& tokenizer_path) {
  ModelTokenizer out;
  const int64_t rows = model.config.vocab_size;
  // A SentencePiece vocabulary fills the embedding exactly; tokenizer.json (and a
  // GGUF "gpt2" vocabulary read as one, whose repeated pieces keep one id) may
  // have fewer ids than the embedding has rows.
  bool exact_size = true;
  if (!tokenizer_path.empty() && is_tokenizer_json(tokenizer_path)) {
    PLIMSOLL_ASSIGN(out, load_json_tokenizer(tokenizer_path));
    exact_size = false;
  } else if (!tokenizer_path.empty()) {
    PLIMSOLL_ASSIGN(const Vocab vocab, load_vocab(tokenizer_path, rows));
    PLIMSOLL_ASSIGN(out, load_vocab_tokenizer(vocab, tokenizer_path));
    exact_size = vocab.model != "gpt2";
  } else if (model.format == ModelFormat::kHfSafetensors) {
    const std::string path = (fs::path(model.path) / "tokenizer.json").string();
    if (!exists(path)) {
      return make_error(ErrorCode::kInvalidArgument,
                        model.path + ": the folder has no tokenizer.json; pass --tokenizer FILE");
    }
    PLIMSOLL_ASSIGN(out, load_json_tokenizer(path));
    exact_size = false;
  } else if (model.vocab) {
    PLIMSOLL_ASSIGN(out, load_vocab_tokenizer(*model.vocab, model.path));
    exact_size = model.vocab->model != "gpt2";
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      model.path + ": the file carries no vocabulary; pass --tokenizer FILE");
  }
  const int64_t n = out.tokenizer->vocab_size();
  if (exact_size ? n != rows : n > rows) {
    return make_error(ErrorCode::kInvalidFile,
                      out.source + ": tokenizer has " + std::to_string(n) + " tokens but the model expects " +
                          (exact_size ? "" : "at most ") + std::to_string(rows));
  }
  // The model's template when the tokenizer brought none (GGUF
  // tokenizer.chat_template, or tokenizer_config.json of the model's folder).
  if (out.chat_template.empty() && model.tokenizer_settings && model.tokenizer_settings->chat_template) {
    out.chat_template = *model.tokenizer_settings->chat_template;
    out.chat_template_source = model.format == ModelFormat::kGguf
                                   ? model.path + ": tokenizer.chat_template"
                                   : model.path + "/tokenizer_config.json: chat_template";
  }
  if (model.tokenizer_settings) {
    if (out.bos_token.empty() && model.tokenizer_settings->bos_token) out.bos_token = *model.tokenizer_settings->bos_token;
    if (out.eos_token.empty() && model.tokenizer_settings->eos_token) out.eos_token = *model.tokenizer_settings->eos_token;
  }
  fill_bos_eos_strings(&out);
  return out;
}

}  // namespace plimsoll
