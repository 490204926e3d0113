// Encoder oracle test: ids that llama2.c's reference run.c produced for a set
// of prompts on tok512.bin, checked on both the llama2.c and the GGUF vocab.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "formats/llama2c_vocab.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace plimsoll {
namespace {

struct ReferenceCase {
  const char* prompt;
  std::vector<int32_t> ids;  // BOS included (run.c encodes with bos=1)
};

// Recorded from karpathy/llama2.c run.c (encode(tokenizer, prompt, 1, 0, ...))
// on stories260K's tok512.bin; the prompts were passed as -i arguments.
const std::vector<ReferenceCase>& reference_cases() {
  static const std::vector<ReferenceCase> cases = {
    {"Hello world",
     {1, 346, 306, 414, 263, 304, 341}},
    {"Once upon a time",
     {1, 403, 407, 261, 378}},
    {"",
     {1}},
    {"a",
     {1, 261}},
    {" ",
     {1, 410, 410}},
    {"  ",
     {1, 410, 410, 410}},
    {" leading space",
     {1, 410, 278, 411, 380, 299, 262, 427, 412, 331}},
    {"trailing space ",
     {1, 259, 420, 412, 290, 299, 262, 427, 412, 331, 410}},
    {"multiple   spaces  here",
     {1, 284, 425, 421, 413, 417, 427, 305, 410, 410, 262, 427, 412, 331, 419, 410, 281, 276}},
    {"line one\nline two\n",
     {1, 278, 271, 411, 353, 411, 13, 421, 271, 411, 259, 424, 414, 13}},
    {"\n",
     {1, 410, 13}},
    {"\n\nTwo newlines first",
     {1, 410, 13, 13, 434, 424, 414, 404, 424, 421, 271, 406, 272, 315, 356}},
    {"Tab\tseparated\tvalues",
     {1, 274, 412, 430, 12, 372, 427, 295, 294, 266, 12, 435, 412, 421, 425, 406}},
    {"Digits 0123456789 and 3.14 and 1,000,000",
     {1, 410, 455, 333, 275, 419, 410, 477, 475, 479, 472, 484, 480, 490, 491, 487, 483, 269, 410, 472, 426, 475, 484, 269, 410, 475, 432, 477, 477, 477, 432, 477, 477, 477}},
    {"Punctuation: !?,.;:'\"()[]{}-_/\\@#$%^&*+=<>|~`",
     {1, 410, 460, 379, 429, 413, 425, 294, 417, 289, 467, 410, 443, 450, 432, 426, 474, 467, 439, 436, 489, 488, 508, 509, 126, 128, 464, 98, 492, 500, 67, 38, 494, 501, 97, 499, 497, 496, 64, 504, 505, 506, 510, 495}},
    {"Lily's mom said, \"Lily, let's go to the park.\"",
     {1, 317, 439, 419, 357, 336, 432, 313, 438, 310, 432, 278, 316, 439, 419, 298, 414, 267, 265, 282, 295, 433, 426, 436}},
    {"café naïve résumé",
     {1, 280, 412, 431, 485, 297, 412, 198, 178, 360, 352, 485, 419, 425, 423, 485}},
    {"Ünïcödé Ågård ß",
     {1, 410, 198, 159, 416, 198, 178, 429, 198, 185, 418, 485, 410, 198, 136, 428, 198, 168, 420, 418, 410, 198, 162}},
    {"日本語のテキスト",
     {1, 410, 233, 154, 168, 233, 159, 175, 235, 173, 161, 230, 132, 177, 230, 134, 137, 230, 133, 176, 230, 133, 188, 230, 134, 139}},
    {"中文 mixed with English",
     {1, 410, 231, 187, 176, 233, 153, 138, 284, 417, 444, 266, 335, 410, 459, 416, 428, 421, 293, 415}},
    {"emoji 😀👍🏽!",
     {1, 344, 423, 414, 449, 417, 410, 243, 162, 155, 131, 243, 162, 148, 144, 243, 162, 146, 192, 443}},
    {"™ and   hair space",
     {1, 410, 507, 269, 410, 511, 300, 315, 262, 427, 412, 331}},
    {"<s> not special </s>",
     {1, 410, 504, 419, 505, 297, 309, 262, 427, 411, 429, 417, 412, 421, 410, 504, 492, 419, 505}},
    {"The quick brown fox jumps over the lazy dog.",
     {1, 291, 410, 456, 425, 417, 340, 268, 420, 327, 416, 272, 414, 444, 410, 449, 425, 423, 427, 419, 334, 330, 265, 278, 412, 451, 422, 400, 428, 426}},
    {"Здравствуй мир",
     {1, 410, 211, 154, 211, 183, 212, 131, 211, 179, 211, 181, 212, 132, 212, 133, 211, 181, 212, 134, 211, 188, 410, 211, 191, 211, 187, 212, 131}},
    {"مرحبا",
     {1, 410, 220, 136, 219, 180, 219, 176, 219, 171, 219, 170}},
    {"á combining",
     {1, 261, 207, 132, 280, 287, 430, 271, 299}},
    {"▁ literal lower one eighth block",
     {1, 410, 229, 153, 132, 278, 275, 285, 412, 421, 278, 327, 285, 353, 411, 344, 333, 415, 413, 415, 268, 421, 414, 340}},
  };
  return cases;
}

// A minimal GGUF v2/v3 reader for the tokenizer.ggml.* keys only, so this test
// can check the GGUF vocabulary before formats/ has a GGUF reader.
class MiniGguf {
 public:
  explicit MiniGguf(std::string bytes) : bytes_(std::move(bytes)) {}

  bool read_vocab(Vocab* vocab) {
    uint32_t magic = 0, version = 0;
    uint64_t n_tensors = 0, n_kv = 0;
    if (!get(&magic) || magic != 0x46554747u || !get(&version) || version < 2) return false;
    if (!get(&n_tensors) || !get(&n_kv)) return false;
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key;
      uint32_t type = 0;
      if (!get_string(&key) || !get(&type) || !read_value(key, type, vocab)) return false;
    }
    return !vocab->pieces.empty();
  }

 private:
  template <typename T>
  bool get(T* out) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_string(std::string* out) {
    uint64_t n = 0;
    if (!get(&n) || bytes_.size() - pos_ < n) return false;
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  static size_t scalar_size(uint32_t type) {
    static const size_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < 13 ? kSizes[type] : 0;
  }
  bool skip_value(uint32_t type) {
    if (type == 8) {
      std::string ignored;
      return get_string(&ignored);
    }
    if (type == 9) {
      uint32_t item_type = 0;
      uint64_t n = 0;
      if (!get(&item_type) || !get(&n)) return false;
      for (uint64_t i = 0; i < n; ++i) {
        if (!skip_value(item_type)) return false;
      }
      return true;
    }
    const size_t size = scalar_size(type);
    if (size == 0 || bytes_.size() - pos_ < size) return false;
    pos_ += size;
    return true;
  }
  template <typename T, typename F>
  bool read_array(uint32_t want_item_type, F&& store) {
    uint32_t item_type = 0;
    uint64_t n = 0;
    if (!get(&item_type) || item_type != want_item_type || !get(&n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      T item{};
      if constexpr (std::is_same_v<T, std::string>) {
        if (!get_string(&item)) return false;
      } else {
        if (!get(&item)) return false;
      }
      store(std::move(item));
    }
    return true;
  }
  bool read_value(const std::string& key, uint32_t type, Vocab* v) {
    if (key == "tokenizer.ggml.model" && type == 8) return get_string(&v->model);
    if (key == "tokenizer.ggml.tokens" && type == 9) {
      return read_array<std::string>(8, [&](std::string s) { v->pieces.push_back(std::move(s)); });
    }
    if (key == "tokenizer.ggml.scores" && type == 9) {
      return read_array<float>(6, [&](float s) { v->scores.push_back(s); });
    }
    if (key == "tokenizer.ggml.token_type" && type == 9) {
      return read_array<int32_t>(5, [&](int32_t t) { v->types.push_back(TokenType{t}); });
    }
    if (key == "tokenizer.ggml.bos_token_id" && type == 4) return get(&v->bos_id);
    if (key == "tokenizer.ggml.eos_token_id" && type == 4) return get(&v->eos_id);
    if (key == "tokenizer.ggml.unknown_token_id" && type == 4) return get(&v->unk_id);
    return skip_value(type);
  }

  std::string bytes_;
  size_t pos_ = 0;
};

Tokenizer llama2c_tokenizer() {
  Result<Vocab> vocab = load_llama2c_vocab(testing::stories_path("tok512.bin"), 512);
  EXPECT_TRUE(vocab.ok()) << vocab.error().message;
  Result<Tokenizer> tokenizer = Tokenizer::create(std::move(vocab).value());
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  return std::move(tokenizer).value();
}

Tokenizer gguf_tokenizer() {
  Vocab vocab;
  vocab.pieces.clear();
  MiniGguf gguf(testing::read_file(testing::stories_path("stories260K.gguf")));
  EXPECT_TRUE(gguf.read_vocab(&vocab)) << "cannot read the GGUF's tokenizer.ggml.* keys";
  Result<Tokenizer> tokenizer = Tokenizer::create(std::move(vocab));
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.error().message;
  return std::move(tokenizer).value();
}

void expect_matches_reference(const Tokenizer& tokenizer) {
  for (const ReferenceCase& c : reference_cases()) {
    EXPECT_EQ(tokenizer.encode(c.prompt, /*add_bos=*/true), c.ids) << "prompt: \"" << c.prompt << '"';
  }
}

TEST(ReferenceIds, Llama2cVocabMatchesRunC) { expect_matches_reference(llama2c_tokenizer()); }

TEST(ReferenceIds, GgufVocabMatchesRunC) { expect_matches_reference(gguf_tokenizer()); }

TEST(ReferenceIds, GgufAndLlama2cVocabsAgree) {
  const Tokenizer a = llama2c_tokenizer();
  const Tokenizer b = gguf_tokenizer();
  ASSERT_EQ(a.vocab_size(), b.vocab_size());
  EXPECT_EQ(a.bos_id(), b.bos_id());
  EXPECT_EQ(a.eos_id(), b.eos_id());
  for (int32_t id = 0; id < a.vocab_size(); ++id) {
    EXPECT_EQ(a.piece(id), b.piece(id)) << "id " << id;
    EXPECT_EQ(a.type(id), b.type(id)) << "id " << id;
  }
  EXPECT_EQ(a.encode("Once upon a time", true), b.encode("Once upon a time", true));
}

TEST(ReferenceIds, DecodeOfReferenceIdsGivesThePromptBack) {
  const Tokenizer tokenizer = llama2c_tokenizer();
  for (const ReferenceCase& c : reference_cases()) {
    EXPECT_EQ(tokenizer.decode(c.ids), c.prompt);
  }
}

}  // namespace
}  // namespace plimsoll
