// Model + tokenizer loading shared by the commands.
#include "cli/model_loading.h"

namespace plimsoll::cli {

Result<ModelAndTokenizer> load_model_and_tokenizer(const std::string& model_path,
                                                   const std::string& tokenizer_path) {
  PLIMSOLL_ASSIGN(LoadedModel model, load_model(model_path));
  PLIMSOLL_ASSIGN(ModelTokenizer tokenizer, load_model_tokenizer(model, tokenizer_path));
  return ModelAndTokenizer{std::move(model), std::move(tokenizer)};
}

}  // namespace plimsoll::cli
