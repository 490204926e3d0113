// Writes the seed corpus for gguf_fuzz: small valid GGUF and llama2.c models
// and a metadata-only GGUF with every value type. Usage: gguf_fuzz_seeds DIR
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tiny_model.h"

namespace {

bool write_seed(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

std::vector<std::byte> every_value_type() {
  using namespace plimsoll;
  GgufWriter w;
  (void)w.set("u8", GgufValue(uint8_t(1)));
  (void)w.set("i8", GgufValue(int8_t(-1)));
  (void)w.set("u16", GgufValue(uint16_t(2)));
  (void)w.set("i16", GgufValue(int16_t(-2)));
  (void)w.set("u32", GgufValue(uint32_t(3)));
  (void)w.set("i32", GgufValue(int32_t(-3)));
  (void)w.set("f32", GgufValue(0.5f));
  (void)w.set("bool", GgufValue(true));
  (void)w.set("str", GgufValue(std::string("s")));
  (void)w.set("u64", GgufValue(uint64_t(4)));
  (void)w.set("i64", GgufValue(int64_t(-4)));
  (void)w.set("f64", GgufValue(0.25));
  (void)w.set("nested", GgufValue(GgufArray{std::vector<GgufArray>{
                            GgufArray{std::vector<std::string>{"a", "b"}},
                            GgufArray{std::vector<bool>{true}}}}));
  return w.to_bytes().value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  namespace t = plimsoll::testing;
  const std::string dir = argv[1];
  t::TinySpec tied;
  tied.with_output = false;
  t::TinySpec quant;
  quant.dim = 32;
  quant.ffn = 32;
  quant.heads = 2;
  quant.layers = 1;
  quant.weight_dtype = plimsoll::DType::kQ8_0;
  t::TinySpec one_layer;
  one_layer.layers = 1;
  one_layer.vocab = 4;
  bool ok = write_seed(dir + "/tiny.gguf", t::tiny_llama_gguf());
  ok = ok && write_seed(dir + "/tied.gguf", t::tiny_llama_gguf(tied));
  ok = ok && write_seed(dir + "/q8_0.gguf", t::tiny_llama_gguf(quant));
  ok = ok && write_seed(dir + "/one_layer.gguf", t::tiny_llama_gguf(one_layer));
  ok = ok && write_seed(dir + "/values.gguf", every_value_type());
  ok = ok && write_seed(dir + "/tiny.bin", t::tiny_llama2c(one_layer));
  ok = ok && write_seed(dir + "/tiny_unshared.bin", t::tiny_llama2c(one_layer, false));
  if (!ok) {
    std::fprintf(stderr, "cannot write seeds to %s\n", dir.c_str());
    return 1;
  }
  return 0;
}
