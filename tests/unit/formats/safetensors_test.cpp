// safetensors: a valid file, each kind of corrupt header (lengths, JSON,
// offsets, sizes, overlaps, holes, duplicates, dtypes), and sharded folders.
#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "safetensors_writer.h"
#include "test_paths.h"

namespace plimsoll {
namespace {

using testing::StTensor;

std::vector<StTensor> two_tensors() {
  return {{"a", "F32", {2, 3}, testing::iota(6)}, {"b", "F16", {4}, testing::iota(4)}};
}

Result<std::vector<SafetensorsTensor>> parse(const std::vector<std::byte>& bytes) {
  return parse_safetensors({bytes.data(), bytes.size()}, "m.safetensors");
}

void expect_error(const std::vector<std::byte>& bytes, ErrorCode code, std::vector<std::string> parts) {
  auto r = parse(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, code) << r.error().message;
  parts.push_back("m.safetensors: ");
  for (const std::string& p : parts) {
    EXPECT_NE(r.error().message.find(p), std::string::npos) << "'" << p << "' not in: " << r.error().message;
  }
}

TEST(Safetensors, ParsesNamesDtypesShapesAndData) {
  const auto bytes = testing::st_bytes(two_tensors());
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  const SafetensorsTensor& a = (*r)[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.n_bytes, 24);
  float v = 0;
  std::memcpy(&v, a.data + 5 * 4, 4);
  EXPECT_FLOAT_EQ(v, 0.05f);
  EXPECT_EQ((*r)[1].dtype, DType::kF16);
}

TEST(Safetensors, MetadataAndPaddingAreAccepted) {
  auto h = testing::st_header(two_tensors());
  h["__metadata__"] = {{"format", "pt"}};
  std::map<std::string, std::string> meta;
  const auto bytes = testing::st_bytes(h.dump() + "     ", two_tensors());
  auto r = parse_safetensors({bytes.data(), bytes.size()}, "m.safetensors", &meta);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(meta["format"], "pt");
}

TEST(Safetensors, HeaderLengthPastTheFile) {
  const auto h = testing::st_header(two_tensors()).dump();
  expect_error(testing::st_bytes(h, two_tensors(), 1 << 20), ErrorCode::kInvalidFile, {"header length"});
  expect_error(std::vector<std::byte>(5), ErrorCode::kInvalidFile, {"8-byte header length"});
}

TEST(Safetensors, HeaderNotJson) {
  expect_error(testing::st_bytes("{\"a\": [", {}), ErrorCode::kInvalidFile, {"not valid JSON"});
  expect_error(testing::st_bytes("[1, 2]", {}), ErrorCode::kInvalidFile, {"JSON object"});
}

TEST(Safetensors, OffsetsOutsideTheData) {
  auto h = testing::st_header(two_tensors());
  h["b"]["data_offsets"] = {24, 4000};
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile,
               {"tensor 'b'", "field 'data_offsets'", "outside the data section"});
}

TEST(Safetensors, SizeDisagreesWithDtypeAndShape) {
  auto h = testing::st_header(two_tensors());
  h["a"]["shape"] = {3, 3};  // 36 bytes, the offsets span 24
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile,
               {"tensor 'a'", "spans 24 bytes", "need 36"});
}

TEST(Safetensors, OverlapsAndHoles) {
  auto h = testing::st_header(two_tensors());
  h["b"]["data_offsets"] = {16, 24};
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile, {"tensor 'b'", "overlaps"});
  auto tensors = two_tensors();
  tensors.push_back({"c", "F32", {1}, {1.0f}});
  auto h2 = testing::st_header(two_tensors());  // c's 4 bytes are not indexed
  expect_error(testing::st_bytes(h2.dump(), tensors), ErrorCode::kInvalidFile, {"cover 32 of the 36"});
  auto h3 = testing::st_header(two_tensors());
  h3["b"]["data_offsets"] = {28, 36};
  expect_error(testing::st_bytes(h3.dump(), tensors), ErrorCode::kInvalidFile, {"tensor 'b'", "hole of 4 bytes"});
}

TEST(Safetensors, DuplicateNamesAndMissingFields) {
  const std::string dup =
      R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  expect_error(testing::st_bytes(dup, {{"a", "F32", {1}, {1.0f}}}), ErrorCode::kInvalidFile, {"'a' twice"});
  auto h = testing::st_header(two_tensors());
  h["a"].erase("shape");
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile, {"tensor 'a'", "missing field 'shape'"});
  h = testing::st_header(two_tensors());
  h["a"]["shape"] = {2, -3};
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile, {"tensor 'a'", "field 'shape'"});
}

TEST(Safetensors, Dtypes) {
  auto h = testing::st_header(two_tensors());
  h["b"]["dtype"] = "I16";
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kUnsupported, {"tensor 'b'", "field 'dtype' is I16"});
  h["b"]["dtype"] = "Q4";
  expect_error(testing::st_bytes(h.dump(), two_tensors()), ErrorCode::kInvalidFile, {"not a safetensors dtype"});
}

class ShardedSafetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::make_temp_dir();
    testing::write_bytes(dir_ + "/one.safetensors", testing::st_bytes({{"a", "F32", {2}, {1, 2}}}));
    testing::write_bytes(dir_ + "/two.safetensors", testing::st_bytes({{"b", "BF16", {2}, {3, 4}}}));
  }
  void write_index(const std::string& map) {
    testing::write_text(dir_ + "/model.safetensors.index.json", "{\"weight_map\": " + map + "}");
  }
  std::string dir_;
};

TEST_F(ShardedSafetensors, LoadsEveryShard) {
  write_index(R"({"a": "one.safetensors", "b": "two.safetensors"})");
  auto set = load_safetensors_dir(dir_);
  ASSERT_TRUE(set.ok()) << set.error().message;
  EXPECT_EQ(set->tensors.size(), 2u);
  EXPECT_EQ(set->files.size(), 2u);
}

TEST_F(ShardedSafetensors, IndexDisagreesWithShards) {
  write_index(R"({"a": "two.safetensors", "b": "two.safetensors"})");
  auto r = load_safetensors_dir(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("model.safetensors.index.json: field 'weight_map'"), std::string::npos)
      << r.error().message;
  write_index(R"({"a": "one.safetensors", "b": "two.safetensors", "c": "two.safetensors"})");
  r = load_safetensors_dir(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'c' in two.safetensors, which does not contain it"), std::string::npos)
      << r.error().message;
  write_index(R"({"a": "one.safetensors", "b": "../two.safetensors"})");
  r = load_safetensors_dir(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("field 'weight_map.b'"), std::string::npos) << r.error().message;
}

TEST_F(ShardedSafetensors, MissingWeights) {
  auto r = load_safetensors_dir(dir_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
  EXPECT_NE(r.error().message.find("model.safetensors"), std::string::npos);
}

}  // namespace
}  // namespace plimsoll
