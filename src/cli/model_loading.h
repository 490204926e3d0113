// Opening a model and its tokenizer for a command: the model file, plus the
// vocabulary from --tokenizer or from inside the model file.
#pragma once

#include <string>

#include "core/result.h"
#include "formats/model_file.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll::cli {

struct ModelAndTokenizer {
  LoadedModel model;
  Tokenizer tokenizer;
};

Result<ModelAndTokenizer> load_model_and_tokenizer(const std::string& model_path,
                                                   const std::string& tokenizer_path);

}  // namespace plimsoll::cli
