// Tokenizer construction (vocabulary checks, lookup tables) and decoding;
// encoding lives in tokenizer_encode.cpp.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace plimsoll {
namespace {

constexpr std::string_view kSpacePiece = "\xE2\x96\x81";  // U+2581

std::string unescape_spaces(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  size_t pos = 0;
  while (pos < piece.size()) {
    if (piece.substr(pos, kSpacePiece.size()) == kSpacePiece) {
      out += ' ';
      pos += kSpacePiece.size();
    } else {
      out += piece[pos++];
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The byte of a "<0xXX>" piece, or -1.
int parse_byte_piece(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  const int hi = hex_value(piece[3]);
  const int lo = hex_value(piece[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Token types whose pieces stand for text that the encoder may produce by merging.
bool is_mergeable_type(TokenType type) {
  return type == TokenType::kNormal || type == TokenType::kUserDefined ||
         type == TokenType::kUndefined;
}

std::string decoded_text(std::string_view piece, TokenType type) {
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnused:
      return "";
    case TokenType::kByte: {
      const int byte = parse_byte_piece(piece);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      return unescape_spaces(piece);
    }
    default:
      return unescape_spaces(piece);
  }
}

Status check_special_id(int32_t id, int64_t size, const char* what) {
  if (id == -1 || (id >= 0 && id < size)) return Status::ok_status();
  return make_error(ErrorCode::kInvalidFile, std::string("vocabulary: ") + what + " id " +
                                                 std::to_string(id) + " is outside 0.." +
                                                 std::to_string(size - 1));
}

Status check_vocab(const Vocab& vocab) {
  if (vocab.model != "llama") {
    return make_error(ErrorCode::kUnsupported, "tokenizer model '" + vocab.model +
                                                   "' is not supported (only 'llama')");
  }
  const int64_t size = vocab.size();
  if (size == 0) return make_error(ErrorCode::kInvalidFile, "vocabulary: no tokens");
  if (size > std::numeric_limits<int32_t>::max()) {
    return make_error(ErrorCode::kInvalidFile, "vocabulary: too many tokens for int32 ids");
  }
  if (static_cast<int64_t>(vocab.scores.size()) != size ||
      static_cast<int64_t>(vocab.types.size()) != size) {
    return make_error(ErrorCode::kInvalidFile,
                      "vocabulary: " + std::to_string(size) + " pieces but " +
                          std::to_string(vocab.scores.size()) + " scores and " +
                          std::to_string(vocab.types.size()) + " types");
  }
  PLIMSOLL_TRY(check_special_id(vocab.bos_id, size, "bos"));
  PLIMSOLL_TRY(check_special_id(vocab.eos_id, size, "eos"));
  PLIMSOLL_TRY(check_special_id(vocab.unk_id, size, "unk"));
  PLIMSOLL_TRY(check_special_id(vocab.pad_id, size, "pad"));
  return Status::ok_status();
}

}  // namespace

Result<Tokenizer> Tokenizer::create(Vocab vocab) {
  PLIMSOLL_TRY(check_vocab(vocab));
  Tokenizer tokenizer(std::move(vocab));
  tokenizer.build_tables();
  return tokenizer;
}

void Tokenizer::build_tables() {
  const size_t n = vocab_.pieces.size();
  merge_scores_.resize(n);
  texts_.resize(n);
  byte_ids_.fill(-1);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string& piece = vocab_.pieces[i];
    const TokenType type = vocab_.types[i];
    const float score = vocab_.scores[i];
    merge_scores_[i] = std::isnan(score) ? -std::numeric_limits<float>::infinity() : score;
    texts_[i] = decoded_text(piece, type);
    piece_to_id_.try_emplace(piece, id);
    if (is_mergeable_type(type) && !piece.empty()) {
      const std::string text = unescape_spaces(piece);
      max_text_bytes_ = std::max(max_text_bytes_, text.size());
      text_to_id_.try_emplace(text, id);
    }
    const int byte = parse_byte_piece(piece);
    if (type == TokenType::kByte && byte >= 0 && byte_ids_[byte] < 0) byte_ids_[byte] = id;
    if (type == TokenType::kControl && !piece.empty()) specials_.push_back({piece, id});
  }
  // Byte tokens not typed as such are still found by their piece.
  for (int b = 0; b < 256; ++b) {
    if (byte_ids_[b] >= 0) continue;
    static constexpr char kHex[] = "0123456789ABCDEF";
    const std::string piece = {'<', '0', 'x', kHex[b >> 4], kHex[b & 15], '>'};
    if (auto it = piece_to_id_.find(piece); it != piece_to_id_.end()) byte_ids_[b] = it->second;
  }
  std::stable_sort(specials_.begin(), specials_.end(), [](const Special& a, const Special& b) {
    return a.text.size() > b.text.size();
  });
  for (const Special& special : specials_) {
    special_first_byte_[static_cast<uint8_t>(special.text[0])] = true;
  }
}

std::string Tokenizer::decode_raw(std::span<const int32_t> ids) const {
  std::string out;
  int32_t prev_id = -1;
  for (const int32_t id : ids) {
    out.append(piece_text(prev_id, id));
    prev_id = id;
  }
  return out;
}

std::string_view Tokenizer::piece_text(int32_t prev_id, int32_t id) const {
  if (!valid_id(id)) return {};
  std::string_view text = texts_[static_cast<size_t>(id)];
  // SentencePiece drops the dummy-prefix space after BOS; llama2.c does so
  // for text pieces only (a <0x20> byte token keeps its space).
  const bool after_bos = prev_id >= 0 && prev_id == vocab_.bos_id;
  if (after_bos && type(id) != TokenType::kByte && !text.empty() && text[0] == ' ') {
    text.remove_prefix(1);
  }
  return text;
}

bool Tokenizer::is_special(int32_t id) const {
  const TokenType t = type(id);
  return t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUnused;
}

std::string_view Tokenizer::piece(int32_t id) const {
  return valid_id(id) ? std::string_view(vocab_.pieces[static_cast<size_t>(id)])
                      : std::string_view();
}

TokenType Tokenizer::type(int32_t id) const {
  return valid_id(id) ? vocab_.types[static_cast<size_t>(id)] : TokenType::kUndefined;
}

std::optional<int32_t> Tokenizer::token_id(std::string_view piece_bytes) const {
  const auto it = piece_to_id_.find(piece_bytes);
  if (it == piece_to_id_.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> Tokenizer::text_token(std::string_view text) const {
  if (text.size() > max_text_bytes_) return std::nullopt;
  const auto it = text_to_id_.find(text);
  if (it == text_to_id_.end()) return std::nullopt;
  return it->second;
}

}  // namespace plimsoll
