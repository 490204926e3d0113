// Tests of the GGUF reader and writer: round trips of every value type and of
// tensor bytes, and strict rejection of hostile headers.
#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/gguf_writer.h"
#include "test_paths.h"
#include "tiny_model.h"

namespace plimsoll {
namespace {

using Bytes = std::vector<std::byte>;

std::span<const std::byte> span_of(const Bytes& b) { return {b.data(), b.size()}; }

template <typename T>
void poke(Bytes& b, size_t pos, T value) {
  ASSERT_LE(pos + sizeof(T), b.size());
  std::memcpy(b.data() + pos, &value, sizeof(T));
}

// Position just after the name string of tensor `name` in the tensor-info section.
size_t after_name(const Bytes& b, const std::string& name) {
  const std::string hay(reinterpret_cast<const char*>(b.data()), b.size());
  std::string needle(8, '\0');
  const uint64_t len = name.size();
  std::memcpy(needle.data(), &len, 8);
  needle += name;
  const size_t pos = hay.rfind(needle);
  EXPECT_NE(pos, std::string::npos) << name;
  return pos + needle.size();
}

// Parses and expects failure with `code` and every substring in `parts`.
void expect_error(const Bytes& b, ErrorCode code, std::vector<std::string> parts) {
  auto r = parse_gguf(span_of(b), "hostile.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find("hostile.gguf: "), std::string::npos) << r.error().message;
  for (const std::string& p : parts) {
    EXPECT_NE(r.error().message.find(p), std::string::npos)
        << "'" << p << "' not in: " << r.error().message;
  }
}

TEST(Gguf, RoundTripsEveryValueType) {
  GgufWriter w;
  std::vector<GgufKv> want = {
      {"a.u8", GgufValue(uint8_t(200))},     {"a.i8", GgufValue(int8_t(-5))},
      {"a.u16", GgufValue(uint16_t(60000))}, {"a.i16", GgufValue(int16_t(-30000))},
      {"a.u32", GgufValue(uint32_t(4e9))},   {"a.i32", GgufValue(int32_t(-2e9))},
      {"a.f32", GgufValue(1.5f)},            {"a.bool", GgufValue(true)},
      {"a.str", GgufValue(std::string("h\xc3\xa9llo"))},
      {"a.u64", GgufValue(uint64_t(1) << 60)}, {"a.i64", GgufValue(int64_t(-1) << 60)},
      {"a.f64", GgufValue(2.25)},
      {"a.arr_str", GgufValue(GgufArray{std::vector<std::string>{"x", "", "yz"}})},
      {"a.arr_bool", GgufValue(GgufArray{std::vector<bool>{true, false, true}})},
      {"a.arr_f64", GgufValue(GgufArray{std::vector<double>{1.0, -2.0}})},
      {"a.arr_empty", GgufValue(GgufArray{std::vector<uint8_t>{}})},
      {"a.nested", GgufValue(GgufArray{std::vector<GgufArray>{
                       GgufArray{std::vector<int32_t>{1, 2}},
                       GgufArray{std::vector<int32_t>{}}}})},
  };
  for (const GgufKv& kv : want) ASSERT_TRUE(w.set(kv.key, kv.value).ok());
  auto bytes = w.to_bytes();
  ASSERT_TRUE(bytes.ok());
  auto g = parse_gguf(span_of(*bytes), "mem");
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_EQ(g->metadata.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(g->metadata[i].key, want[i].key);
    EXPECT_EQ(g->metadata[i].value, want[i].value) << want[i].key;
  }
  EXPECT_EQ(*g->get_int("a.u32"), 4000000000LL);
  EXPECT_EQ(*g->get_int("a.i8"), -5);
  EXPECT_EQ(*g->get_float("a.f32"), 1.5);
  EXPECT_FALSE(g->get_int("a.str").ok());
  EXPECT_EQ(g->get_int("missing").error().code, ErrorCode::kNotFound);
}

TEST(Gguf, SetReplacesAndRejectsAlignment) {
  GgufWriter w;
  ASSERT_TRUE(w.set("k", GgufValue(uint32_t(1))).ok());
  ASSERT_TRUE(w.set("k", GgufValue(uint32_t(2))).ok());
  EXPECT_FALSE(w.set("general.alignment", GgufValue(uint32_t(64))).ok());
  auto g = parse_gguf(span_of(*w.to_bytes()), "mem");
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->metadata.size(), 1u);
  EXPECT_EQ(*g->get_int("k"), 2);
}

TEST(Gguf, WritesFileAtomicallyAndTensorsRoundTrip) {
  GgufWriter w;
  std::vector<float> a(3 * 5);
  for (size_t i = 0; i < a.size(); ++i) a[i] = float(i) * 0.5f;
  std::vector<std::byte> q(dtype_row_bytes(DType::kQ8_0, 64) * 2);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::byte(i & 0xff);
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {3, 5},
                           std::as_bytes(std::span<const float>(a))).ok());
  ASSERT_TRUE(w.add_tensor("q", DType::kQ8_0, {2, 64}, std::span<const std::byte>(q)).ok());
  int calls = 0;
  ASSERT_TRUE(w.add_tensor("p", DType::kF16, {7}, [&](std::span<std::byte> out) {
                 ++calls;
                 for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte(0xa0 + i);
                 return Status();
               }).ok());
  EXPECT_FALSE(w.add_tensor("a", DType::kF32, {1}, std::span<const std::byte>()).ok());
  EXPECT_FALSE(w.add_tensor("bad", DType::kQ8_0, {2, 33}, std::span<const std::byte>()).ok());
  EXPECT_FALSE(w.add_tensor("small", DType::kF32, {4}, std::span<const std::byte>(q).first(3)).ok());

  const std::string dir = testing::make_temp_dir();
  const std::string path = dir + "/t.gguf";
  ASSERT_TRUE(w.write(path).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  auto g = parse_gguf(**file);
  ASSERT_TRUE(g.ok()) << g.error().message;
  ASSERT_EQ(g->tensors.size(), 3u);
  std::span<const std::byte> all((*file)->data(), (*file)->size_bytes());
  const GgufTensorInfo* ta = g->find_tensor("a");
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(ta->ne, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(0, std::memcmp(gguf_tensor_bytes(all, *ta).data(), a.data(), a.size() * 4));
  const GgufTensorInfo* tq = g->find_tensor("q");
  EXPECT_EQ(tq->dtype, DType::kQ8_0);
  EXPECT_EQ(0, std::memcmp(gguf_tensor_bytes(all, *tq).data(), q.data(), q.size()));
  const GgufTensorInfo* tp = g->find_tensor("p");
  EXPECT_EQ(tp->n_bytes, 14);
  EXPECT_EQ(gguf_tensor_bytes(all, *tp)[13], std::byte(0xa0 + 13));
  for (const GgufTensorInfo& t : g->tensors) EXPECT_EQ(t.file_offset_bytes % 32, 0) << t.name;
  std::filesystem::remove_all(dir);
}

TEST(Gguf, FailedProducerLeavesNoFile) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("p", DType::kF32, {4}, [](std::span<std::byte>) {
                 return Status(make_error(ErrorCode::kInternal, "boom"));
               }).ok());
  const std::string dir = testing::make_temp_dir();
  Status s = w.write(dir + "/x.gguf");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("boom"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf.tmp"));
  std::filesystem::remove_all(dir);
}

TEST(Gguf, ReadsTheLlamaCppFixture) {
  auto file = MappedFile::open(testing::stories_path("stories260K.gguf"));
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto g = parse_gguf(**file);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->version, 3u);
  EXPECT_EQ(g->tensors.size(), 48u);
  EXPECT_EQ(*g->get_string("general.architecture"), "llama");
  EXPECT_EQ(*g->get_int("llama.embedding_length"), 64);
  EXPECT_EQ((*g->get_array("tokenizer.ggml.tokens"))->size(), 512u);
  EXPECT_EQ(g->find_tensor("token_embd.weight")->shape, (std::vector<int64_t>{512, 64}));
}

// ---- hostile input ----

TEST(GgufHostile, EveryTruncationFailsCleanly) {
  const Bytes good = testing::tiny_llama_gguf();
  ASSERT_TRUE(parse_gguf(span_of(good), "x").ok());
  for (size_t n = 0; n < good.size(); ++n) {
    Bytes cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    auto r = parse_gguf(span_of(cut), "cut.gguf");
    ASSERT_FALSE(r.ok()) << "truncated at " << n;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidFile) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("cut.gguf: ", 0), 0u) << r.error().message;
  }
}

TEST(GgufHostile, BadMagicAndVersion) {
  Bytes b = testing::tiny_llama_gguf();
  Bytes m = b;
  m[0] = std::byte('X');
  expect_error(m, ErrorCode::kInvalidFile, {"bad magic"});
  for (uint32_t v : {1u, 4u, 0x03000000u}) {
    Bytes x = b;
    poke<uint32_t>(x, 4, v);
    expect_error(x, ErrorCode::kUnsupported, {"unsupported GGUF version " + std::to_string(v)});
  }
  Bytes v2 = b;
  poke<uint32_t>(v2, 4, 2);
  EXPECT_TRUE(parse_gguf(span_of(v2), "v2").ok());
}

TEST(GgufHostile, HugeCounts) {
  Bytes b = testing::tiny_llama_gguf();
  Bytes t = b;
  poke<uint64_t>(t, 8, uint64_t(1) << 62);
  expect_error(t, ErrorCode::kInvalidFile, {"tensor count 4611686018427387904", "cannot fit"});
  Bytes k = b;
  poke<uint64_t>(k, 16, ~uint64_t(0));
  expect_error(k, ErrorCode::kInvalidFile, {"metadata count", "cannot fit"});
}

TEST(GgufHostile, BadValuesAndStrings) {
  GgufWriter w;
  ASSERT_TRUE(w.set("key", GgufValue(GgufArray{std::vector<std::string>{"abc"}})).ok());
  const Bytes b = *w.to_bytes();
  // layout: 24 header, key (8 + 3), type u32 @35, elem type u32 @39, count u64 @43, str len @51
  Bytes bad_type = b;
  poke<uint32_t>(bad_type, 35, 13);
  expect_error(bad_type, ErrorCode::kInvalidFile, {"key 'key' has unknown value type 13"});
  Bytes bad_elem = b;
  poke<uint32_t>(bad_elem, 39, 99);
  expect_error(bad_elem, ErrorCode::kInvalidFile, {"unknown value type 99"});
  Bytes huge_array = b;
  poke<uint64_t>(huge_array, 43, uint64_t(1) << 40);
  expect_error(huge_array, ErrorCode::kInvalidFile, {"claims 1099511627776 array elements"});
  Bytes huge_string = b;
  poke<uint64_t>(huge_string, 51, ~uint64_t(0) - 3);
  expect_error(huge_string, ErrorCode::kInvalidFile, {"truncated", "string value of 'key'"});
  Bytes huge_key = b;
  poke<uint64_t>(huge_key, 24, uint64_t(1) << 20);
  expect_error(huge_key, ErrorCode::kInvalidFile, {"metadata key", "more than 65535"});
  Bytes bad_bool = b;
  poke<uint32_t>(bad_bool, 35, 7);  // bool, value byte = low byte of elem type (8)
  expect_error(bad_bool, ErrorCode::kInvalidFile, {"bool value 8"});
}

TEST(GgufHostile, DeeplyNestedArrays) {
  Bytes b(24);
  std::memcpy(b.data(), "GGUF", 4);
  poke<uint32_t>(b, 4, 3);
  poke<uint64_t>(b, 16, 1);
  auto put = [&](auto v) {
    const size_t at = b.size();
    b.resize(at + sizeof(v));
    std::memcpy(b.data() + at, &v, sizeof(v));
  };
  put(uint64_t(1));
  b.push_back(std::byte('k'));
  put(uint32_t(9));
  for (int i = 0; i < 1000; ++i) {
    put(uint32_t(9));
    put(uint64_t(1));
  }
  expect_error(b, ErrorCode::kInvalidFile, {"nests arrays deeper than 8"});
}

TEST(GgufHostile, DuplicateKeysAndTensors) {
  GgufWriter w;
  ASSERT_TRUE(w.set("aa", GgufValue(uint8_t(1))).ok());
  ASSERT_TRUE(w.set("ab", GgufValue(uint8_t(1))).ok());
  ASSERT_TRUE(w.add_tensor("ta", DType::kF32, {1}, testing::tiny_values(DType::kF32, 0)).ok());
  ASSERT_TRUE(w.add_tensor("tb", DType::kF32, {1}, testing::tiny_values(DType::kF32, 0)).ok());
  Bytes b = *w.to_bytes();
  Bytes k = b;
  k[24 + 15 + 8 + 1] = std::byte('a');  // second key "ab" -> "aa"
  expect_error(k, ErrorCode::kInvalidFile, {"duplicate metadata key 'aa'"});
  Bytes t = b;
  t[after_name(t, "tb") - 1] = std::byte('a');
  expect_error(t, ErrorCode::kInvalidFile, {"duplicate tensor 'ta'"});
}

TEST(GgufHostile, BadTensorInfos) {
  const Bytes b = testing::tiny_llama_gguf();
  const std::string q = "blk.0.attn_q.weight";
  const size_t at = after_name(b, q);  // n_dims u32, ne[2] u64, type u32, offset u64
  {
    Bytes x = b;
    poke<uint32_t>(x, at, 0);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has 0 dimensions"});
    poke<uint32_t>(x, at, 5);
    expect_error(x, ErrorCode::kInvalidFile, {"has 5 dimensions"});
  }
  {
    Bytes x = b;
    poke<uint32_t>(x, at + 4 + 16, 9);
    expect_error(x, ErrorCode::kUnsupported, {"tensor '" + q + "' has type Q8_1, not supported"});
    poke<uint32_t>(x, at + 4 + 16, 777);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has unknown type id 777"});
    poke<uint32_t>(x, at + 4 + 16, 8);  // Q8_0 with rows of 8
    expect_error(x, ErrorCode::kInvalidFile, {"row length 8", "block size 32 of Q8_0"});
    poke<uint32_t>(x, at + 4 + 16, 3);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 32 of Q4_1"});
    poke<uint32_t>(x, at + 4 + 16, 23);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ4_XS"});
    poke<uint32_t>(x, at + 4 + 16, 16);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ2_XXS"});
    poke<uint32_t>(x, at + 4 + 16, 17);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ2_XS"});
    poke<uint32_t>(x, at + 4 + 16, 18);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ3_XXS"});
    poke<uint32_t>(x, at + 4 + 16, 19);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ1_S"});
    poke<uint32_t>(x, at + 4 + 16, 21);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ3_S"});
    poke<uint32_t>(x, at + 4 + 16, 22);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ2_S"});
    poke<uint32_t>(x, at + 4 + 16, 29);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' has row length 8", "block size 256 of IQ1_M"});
  }
  {
    Bytes x = b;
    poke<uint64_t>(x, at + 4, 0);
    expect_error(x, ErrorCode::kInvalidFile, {"has dimension 0"});
    poke<uint64_t>(x, at + 4, uint64_t(1) << 40);
    poke<uint64_t>(x, at + 12, uint64_t(1) << 40);
    expect_error(x, ErrorCode::kInvalidFile, {"too many elements"});
  }
  {
    Bytes x = b;
    poke<uint64_t>(x, at + 4 + 16 + 4, uint64_t(1) << 50);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor '" + q + "' data", "outside the file"});
    poke<uint64_t>(x, at + 4 + 16 + 4, ~uint64_t(0) - 7);
    expect_error(x, ErrorCode::kInvalidFile, {"outside the file"});
    poke<uint64_t>(x, at + 4 + 16 + 4, 36);
    expect_error(x, ErrorCode::kInvalidFile, {"offset 36 is not a multiple of the alignment 32"});
  }
  {
    Bytes x = b;
    const size_t name_len_at = after_name(x, q) - q.size() - 8;
    poke<uint64_t>(x, name_len_at, 1000);
    expect_error(x, ErrorCode::kInvalidFile, {"tensor name", "more than 64"});
  }
}

}  // namespace
}  // namespace plimsoll
