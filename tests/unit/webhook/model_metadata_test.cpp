// Model metadata from annotations: shapes, weight bytes from params x dtype
// or given exactly, and errors that name the annotation.
#include <gtest/gtest.h>

#include "core/bytes.h"
#include "webhook/model_metadata.h"

namespace plimsoll::webhook {
namespace {

Annotations base() {
  return {{keys::kModelDim, "4096"},   {keys::kModelLayers, "32"},    {keys::kModelHeadDim, "128"},
          {keys::kModelKvHeads, "8"},  {keys::kModelFfn, "14336"},    {keys::kModelVocab, "128256"},
          {keys::kModelContext, "8192"}, {keys::kModelParams, "8B"}, {keys::kModelDtype, "f16"}};
}

TEST(ModelMetadata, ReadsAGqaModel) {
  auto m = read_model_metadata(base());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->config.n_heads, 32);
  EXPECT_EQ(m->config.n_kv_heads, 8);
  EXPECT_EQ(m->config.kv_dim(), 1024);
  EXPECT_EQ(m->config.max_seq_len, 8192);
  EXPECT_EQ(m->weights_bytes, 16'000'000'000);  // 8e9 x 2 B
  EXPECT_EQ(m->runtime_bytes, kDefaultRuntimeBytes);
}

TEST(ModelMetadata, QuantizedWeightsAndExactBytes) {
  Annotations a = base();
  a[keys::kModelDtype] = "q4_0";  // 18 bytes per 32 weights
  EXPECT_EQ(read_model_metadata(a)->weights_bytes, 8'000'000'000 / 32 * 18);
  a[keys::kModelWeightsBytes] = "4.5Gi";
  a[keys::kRuntimeBytes] = "200Mi";
  EXPECT_EQ(read_model_metadata(a)->weights_bytes, 4 * kGiB + kGiB / 2);
  EXPECT_EQ(read_model_metadata(a)->runtime_bytes, 200 * kMiB);
}

TEST(ModelMetadata, ErrorsNameTheAnnotation) {
  const std::pair<std::string, std::string> cases[] = {
      {keys::kModelLayers, "0"}, {keys::kModelDim, "abc"}, {keys::kModelDtype, "q9_9"}, {keys::kModelParams, "7X"}};
  for (const auto& [key, value] : cases) {
    Annotations a = base();
    a[key] = value;
    auto m = read_model_metadata(a);
    ASSERT_FALSE(m.ok()) << key;
    EXPECT_NE(m.error().message.find(key), std::string::npos) << m.error().message;
  }
  Annotations missing = base();
  missing.erase(keys::kModelFfn);
  EXPECT_NE(read_model_metadata(missing).error().message.find(keys::kModelFfn), std::string::npos);
  Annotations odd = base();
  odd[keys::kModelHeads] = "30";  // 30 x 128 != 4096
  EXPECT_EQ(read_model_metadata(odd).error().code, ErrorCode::kUnsupported);
}

TEST(ModelMetadata, CountsAndCpus) {
  EXPECT_EQ(*parse_param_count("260K"), 260'000);
  EXPECT_EQ(*parse_param_count("1.1B"), 1'100'000'000);
  EXPECT_EQ(*parse_param_count("6738415616"), 6'738'415'616);
  EXPECT_FALSE(parse_param_count("-1").ok());
  EXPECT_EQ(*parse_cpu_count("500m"), 1);
  EXPECT_EQ(*parse_cpu_count("2"), 2);
  EXPECT_EQ(*parse_cpu_count("2500m"), 3);
  EXPECT_FALSE(parse_cpu_count("2 cores").ok());
  EXPECT_TRUE(declares_model(base()));
  EXPECT_FALSE(declares_model({{"plimsoll.dev/check", "skip"}}));
}

}  // namespace
}  // namespace plimsoll::webhook
