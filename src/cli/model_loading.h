// Opening a model and its tokenizer for a command: the model file, plus the
// tokenizer from --tokenizer, the Hugging Face folder or the model file (see
// tokenizer/tokenizer_loading.h for the order).
#pragma once

#include <string>

#include "core/result.h"
#include "formats/model_file.h"
#include "tokenizer/tokenizer_loading.h"

namespace plimsoll::cli {

struct ModelAndTokenizer {
  LoadedModel model;
  ModelTokenizer tokenizer;  // tokenizer.tokenizer is never null
};

Result<ModelAndTokenizer> load_model_and_tokenizer(const std::string& model_path,
                                                   const std::string& tokenizer_path);

}  // namespace plimsoll::cli
