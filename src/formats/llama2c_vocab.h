// Reader of llama2.c tokenizer files (tokenizer.bin / tok512.bin) into a Vocab.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "formats/vocab.h"

namespace plimsoll {

// vocab_size: how many entries to read (the file does not store it; it comes
// from the model's header). Pieces are converted to SentencePiece form
// (space -> U+2581); ids 0..2 become <unk>, <s>, </s> (control); <0xXX>
// pieces are byte tokens. Errors (one line, naming the file and the entry
// index): kInvalidArgument for vocab_size outside 1..2^24; kInvalidFile for a
// truncated file, a length that is negative or above max_token_length, or fewer
// entries than vocab_size; kIo when the file cannot be opened.
Result<Vocab> load_llama2c_vocab(const std::string& path, int64_t vocab_size);
// A tokenizer file alone (no model to give the size): every entry up to the end
// of the file; kInvalidFile when the file does not end at an entry's end.
Result<Vocab> load_llama2c_vocab(const std::string& path);
// The number of whole entries `bytes` holds, read to the end.
Result<int64_t> count_llama2c_vocab_entries(std::string_view bytes, const std::string& name);
// The same from bytes in memory (fuzzing, tests); `name` is used in errors.
Result<Vocab> parse_llama2c_vocab(std::string_view bytes, int64_t vocab_size,
                                  const std::string& name);

}  // namespace plimsoll
