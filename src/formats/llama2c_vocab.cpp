// llama2.c tokenizer reader: validates the byte layout (max_token_length, then
// score/length/bytes per entry) and converts entries to the Vocab form.
#include "formats/llama2c_vocab.h"

#include <cstring>
#include <memory>

#include "core/mapped_file.h"

namespace plimsoll {
namespace {

// Bounds that no real llama2.c tokenizer comes near (Llama 2's: 27 bytes, 32000 entries).
constexpr int32_t kMaxTokenLengthLimitBytes = 1 << 20;
constexpr int64_t kMaxVocabSize = int64_t{1} << 24;
constexpr int64_t kEntryHeaderBytes = 8;  // float32 score + int32 length
constexpr std::string_view kSpacePiece = "\xE2\x96\x81";  // U+2581

// A little-endian reader over the file's bytes that never reads past the end.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}
  int64_t remaining_bytes() const { return static_cast<int64_t>(bytes_.size() - pos_); }
  bool read_i32(int32_t* out) { return read_raw(out, sizeof(*out)); }
  bool read_f32(float* out) { return read_raw(out, sizeof(*out)); }
  bool read_bytes(int64_t n, std::string_view* out) {
    if (n < 0 || n > remaining_bytes()) return false;
    *out = bytes_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }

 private:
  bool read_raw(void* out, size_t n) {
    if (n > bytes_.size() - pos_) return false;
    std::memcpy(out, bytes_.data() + pos_, n);  // files and hosts are little-endian
    pos_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// "<0xXX>" as llama2.c writes byte tokens.
bool is_byte_piece(std::string_view piece) {
  return piece.size() == 6 && piece.substr(0, 3) == "<0x" && is_hex_digit(piece[3]) &&
         is_hex_digit(piece[4]) && piece[5] == '>';
}

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ' ') {
      out += kSpacePiece;
    } else {
      out += c;
    }
  }
  return out;
}

// Fills piece and type of entry `id` from the raw bytes the file stores.
void convert_entry(int64_t id, std::string_view raw, Vocab* vocab) {
  static constexpr const char* kSpecialPieces[] = {"<unk>", "<s>", "</s>"};
  static constexpr TokenType kSpecialTypes[] = {TokenType::kUnknown, TokenType::kControl,
                                                TokenType::kControl};
  if (id < 3) {
    vocab->pieces.emplace_back(kSpecialPieces[id]);
    vocab->types.push_back(kSpecialTypes[id]);
  } else if (is_byte_piece(raw)) {
    vocab->pieces.emplace_back(raw);
    vocab->types.push_back(TokenType::kByte);
  } else {
    vocab->pieces.push_back(escape_spaces(raw));
    vocab->types.push_back(TokenType::kNormal);
  }
}

std::string entry_context(const std::string& name, int64_t id, int64_t vocab_size) {
  return name + ": entry " + std::to_string(id) + " of " + std::to_string(vocab_size);
}

Result<int32_t> read_max_token_length(ByteReader* reader, const std::string& name) {
  int32_t max_token_length = 0;
  if (!reader->read_i32(&max_token_length)) {
    return make_error(ErrorCode::kInvalidFile,
                      name + ": truncated: no max_token_length header (file shorter than 4 bytes)");
  }
  if (max_token_length <= 0 || max_token_length > kMaxTokenLengthLimitBytes) {
    return make_error(ErrorCode::kInvalidFile,
                      name + ": max_token_length " + std::to_string(max_token_length) +
                          " is outside 1.." + std::to_string(kMaxTokenLengthLimitBytes));
  }
  return max_token_length;
}

Status read_entry(ByteReader* reader, int64_t id, int64_t vocab_size, int32_t max_token_length,
                  const std::string& name, Vocab* vocab) {
  float score = 0;
  int32_t length = 0;
  if (!reader->read_f32(&score) || !reader->read_i32(&length)) {
    return make_error(ErrorCode::kInvalidFile,
                      entry_context(name, id, vocab_size) +
                          ": truncated: file ends inside the score/length header (fewer entries "
                          "than vocab_size?)");
  }
  if (length < 0 || length > max_token_length) {
    return make_error(ErrorCode::kInvalidFile, entry_context(name, id, vocab_size) +
                                                   ": piece length " + std::to_string(length) +
                                                   " is outside 0..max_token_length " +
                                                   std::to_string(max_token_length));
  }
  std::string_view raw;
  if (!reader->read_bytes(length, &raw)) {
    return make_error(ErrorCode::kInvalidFile,
                      entry_context(name, id, vocab_size) + ": truncated: piece of " +
                          std::to_string(length) + " bytes but only " +
                          std::to_string(reader->remaining_bytes()) + " bytes left");
  }
  vocab->scores.push_back(score);
  convert_entry(id, raw, vocab);
  return Status::ok_status();
}

}  // namespace

Result<Vocab> parse_llama2c_vocab(std::string_view bytes, int64_t vocab_size,
                                  const std::string& name) {
  if (vocab_size <= 0 || vocab_size > kMaxVocabSize) {
    return make_error(ErrorCode::kInvalidArgument,
                      name + ": vocab_size " + std::to_string(vocab_size) + " is outside 1.." +
                          std::to_string(kMaxVocabSize));
  }
  ByteReader reader(bytes);
  PLIMSOLL_ASSIGN(const int32_t max_token_length, read_max_token_length(&reader, name));
  if (reader.remaining_bytes() / kEntryHeaderBytes < vocab_size) {
    return make_error(ErrorCode::kInvalidFile,
                      name + ": truncated: " + std::to_string(reader.remaining_bytes()) +
                          " bytes cannot hold " + std::to_string(vocab_size) +
                          " entries (vocab_size from the model header)");
  }
  Vocab vocab;
  vocab.model = "llama";
  vocab.pieces.reserve(static_cast<size_t>(vocab_size));
  vocab.scores.reserve(static_cast<size_t>(vocab_size));
  vocab.types.reserve(static_cast<size_t>(vocab_size));
  for (int64_t id = 0; id < vocab_size; ++id) {
    PLIMSOLL_TRY(read_entry(&reader, id, vocab_size, max_token_length, name, &vocab));
  }
  // Ids 0..2 are <unk>, <s>, </s> when the vocabulary is large enough to hold them.
  vocab.unk_id = 0;
  vocab.bos_id = vocab_size > 1 ? 1 : -1;
  vocab.eos_id = vocab_size > 2 ? 2 : -1;
  vocab.add_bos = vocab.bos_id >= 0;
  vocab.add_space_prefix = true;
  return vocab;
}

Result<int64_t> count_llama2c_vocab_entries(std::string_view bytes, const std::string& name) {
  ByteReader reader(bytes);
  PLIMSOLL_ASSIGN(const int32_t max_token_length, read_max_token_length(&reader, name));
  int64_t n = 0;
  Vocab scratch;
  while (reader.remaining_bytes() > 0) {
    if (n == kMaxVocabSize) {
      return make_error(ErrorCode::kInvalidFile, name + ": more than " + std::to_string(kMaxVocabSize) + " entries");
    }
    PLIMSOLL_TRY(read_entry(&reader, n, n + 1, max_token_length, name, &scratch));
    scratch.pieces.clear();
    scratch.scores.clear();
    scratch.types.clear();
    ++n;
  }
  return n;
}

Result<Vocab> load_llama2c_vocab(const std::string& path) {
  PLIMSOLL_ASSIGN(const std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const std::string_view bytes(reinterpret_cast<const char*>(file->data()),
                               static_cast<size_t>(file->size_bytes()));
  PLIMSOLL_ASSIGN(const int64_t entries, count_llama2c_vocab_entries(bytes, path));
  return parse_llama2c_vocab(bytes, entries, path);
}

Result<Vocab> load_llama2c_vocab(const std::string& path, int64_t vocab_size) {
  PLIMSOLL_ASSIGN(const std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const std::string_view bytes(reinterpret_cast<const char*>(file->data()),
                               static_cast<size_t>(file->size_bytes()));
  return parse_llama2c_vocab(bytes, vocab_size, path);
}

}  // namespace plimsoll
