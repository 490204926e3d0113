// llama2.c tokenizer reader (stub until implemented).
#include "formats/llama2c_vocab.h"

namespace plimsoll {

Result<Vocab> load_llama2c_vocab(const std::string& path, int64_t) {
  return make_error(ErrorCode::kUnsupported, path + ": llama2.c tokenizer reader not implemented yet");
}
Result<Vocab> parse_llama2c_vocab(std::string_view, int64_t, const std::string& name) {
  return make_error(ErrorCode::kUnsupported, name + ": llama2.c tokenizer reader not implemented yet");
}

}  // namespace plimsoll
