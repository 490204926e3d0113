// libFuzzer target for the tokenizer: encode/decode/stream-decode arbitrary
// text on tok512.bin, and parse arbitrary bytes as a llama2.c vocabulary.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "formats/llama2c_vocab.h"
#include "tokenizer/stream_decoder.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace plimsoll {
namespace {

// tok512.bin: $PLIMSOLL_TOK512, else $PLIMSOLL_SHARED_DIR/models/stories260K/,
// else the build's PLIMSOLL_DEFAULT_SHARED_DIR, else ../shared beside the cwd.
std::string tok512_path() {
  if (const char* path = std::getenv("PLIMSOLL_TOK512")) return path;
  std::string shared = "../shared";
#ifdef PLIMSOLL_DEFAULT_SHARED_DIR
  shared = PLIMSOLL_DEFAULT_SHARED_DIR;
#endif
  if (const char* env = std::getenv("PLIMSOLL_SHARED_DIR")) shared = env;
  return shared + "/models/stories260K/tok512.bin";
}

const Tokenizer& stories() {
  static const Tokenizer* tokenizer = [] {
    Result<Vocab> vocab = load_llama2c_vocab(tok512_path(), 512);
    if (!vocab.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: %s (set PLIMSOLL_TOK512)\n", vocab.error().message.c_str());
      std::abort();
    }
    Result<Tokenizer> t = Tokenizer::create(std::move(vocab).value());
    if (!t.ok()) std::abort();
    return new Tokenizer(std::move(t).value());
  }();
  return *tokenizer;
}

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: check failed: %s\n", what);
    std::abort();
  }
}

std::string stream_decode(const Tokenizer& t, const std::vector<int32_t>& ids) {
  StreamDecoder decoder(t);
  std::string out;
  for (const int32_t id : ids) {
    const std::string part = decoder.push(id);
    check(utf8_lossy(part) == part, "stream output is valid UTF-8");
    out += part;
  }
  return out + decoder.finish();
}

void fuzz_text(const Tokenizer& t, std::string_view text) {
  const std::vector<int32_t> ids = t.encode(text, /*add_bos=*/true);
  for (const int32_t id : ids) check(id >= 0 && id < t.vocab_size(), "ids in range");
  check(t.decode_raw(ids) == text, "decode_raw(encode(x)) == x");
  check(stream_decode(t, ids) == utf8_lossy(text), "stream == lossy decode");
  const std::vector<int32_t> special = t.encode(text, false, /*parse_special=*/true);
  for (const int32_t id : special) check(id >= 0 && id < t.vocab_size(), "special ids in range");
}

// The input read as little-endian uint16 ids, some of them out of range.
void fuzz_ids(const Tokenizer& t, std::string_view bytes) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
    const auto lo = static_cast<uint8_t>(bytes[i]);
    const auto hi = static_cast<uint8_t>(bytes[i + 1]);
    ids.push_back(static_cast<int32_t>((hi << 8 | lo) % 600) - 8);
  }
  check(stream_decode(t, ids) == utf8_lossy(t.decode(ids)), "stream == lossy decode (ids)");
}

// The input as a llama2.c vocabulary file; its first byte picks vocab_size.
void fuzz_vocab(std::string_view bytes) {
  if (bytes.empty()) return;
  const int64_t vocab_size = 1 + static_cast<uint8_t>(bytes[0]) % 64;
  Result<Vocab> vocab = parse_llama2c_vocab(bytes.substr(1), vocab_size, "fuzz");
  if (!vocab.ok()) return;
  Result<Tokenizer> t = Tokenizer::create(std::move(vocab).value());
  if (!t.ok()) return;
  for (const std::string_view text : {std::string_view("Hello world"), bytes.substr(0, 256)}) {
    const std::vector<int32_t> ids = t->encode(text, true, true);
    for (const int32_t id : ids) check(id >= 0 && id < t->vocab_size(), "hostile vocab ids in range");
    (void)stream_decode(*t, ids);
  }
}

}  // namespace
}  // namespace plimsoll

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const plimsoll::Tokenizer& t = plimsoll::stories();
  plimsoll::fuzz_text(t, bytes);
  plimsoll::fuzz_ids(t, bytes);
  plimsoll::fuzz_vocab(bytes);
  return 0;
}
