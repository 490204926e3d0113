// Model + tokenizer loading shared by the commands.
#include "cli/model_loading.h"

namespace plimsoll::cli {

Result<ModelAndTokenizer> load_model_and_tokenizer(const std::string& model_path,
                                                   const std::string& tokenizer_path) {
  PLIMSOLL_ASSIGN(LoadedModel model, load_model(model_path));
  Vocab vocab;
  if (!tokenizer_path.empty()) {
    PLIMSOLL_ASSIGN(vocab, load_vocab(tokenizer_path, model.config.vocab_size));
  } else if (model.vocab) {
    vocab = *model.vocab;
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      model_path + ": the file carries no vocabulary; pass --tokenizer FILE");
  }
  if (vocab.size() != model.config.vocab_size) {
    return make_error(ErrorCode::kInvalidFile,
                      "tokenizer has " + std::to_string(vocab.size()) + " tokens but the model expects " +
                          std::to_string(model.config.vocab_size));
  }
  PLIMSOLL_ASSIGN(Tokenizer tokenizer, Tokenizer::create(vocab));
  return ModelAndTokenizer{std::move(model), std::move(tokenizer)};
}

}  // namespace plimsoll::cli
