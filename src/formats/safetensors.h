// safetensors reader: one file (8-byte little-endian header length + JSON
// header + data) or a sharded set (model.safetensors.index.json), validated strictly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/mapped_file.h"
#include "core/result.h"

namespace plimsoll {

struct SafetensorsTensor {
  std::string name;
  std::string file;              // the file it lives in (for errors)
  DType dtype = DType::kF32;     // F32, F16, BF16
  std::vector<int64_t> shape;    // outermost first, as stored
  const std::byte* data = nullptr;  // into the file's bytes
  int64_t n_bytes = 0;
};

// Limits: a header above 100 MiB is refused (the reference implementation's bound).
constexpr int64_t kSafetensorsMaxHeaderBytes = int64_t{100} << 20;

// Parses one file's bytes. Checks: header length inside the file, the header
// is a JSON object, every entry has dtype / shape / data_offsets of the right
// types, a supported dtype, a byte size equal to dtype x shape, offsets inside
// the data section, no overlaps and no holes (as the reference implementation),
// and no duplicate names. Errors (kInvalidFile, kUnsupported for other dtypes)
// start with `name` and name the tensor and field. Views point into `bytes`.
// `metadata` receives "__metadata__" (string -> string) when present.
Result<std::vector<SafetensorsTensor>> parse_safetensors(std::span<const std::byte> bytes,
                                                          const std::string& name,
                                                          std::map<std::string, std::string>* metadata = nullptr);

// A set of mapped safetensors files and their tensors.
struct SafetensorsSet {
  std::vector<std::shared_ptr<MappedFile>> files;
  std::vector<SafetensorsTensor> tensors;  // in file order, then header order
};

// Maps and parses `dir`/model.safetensors, or the shards that
// `dir`/model.safetensors.index.json names (its "weight_map": every tensor must
// be in the shard it names, every shard's tensors in the map, no duplicates).
Result<SafetensorsSet> load_safetensors_dir(const std::string& dir);
// The shard files an index (model.safetensors.index.json) names, sorted, each
// once; errors name the file and field (a shard must be a plain file name).
Result<std::vector<std::string>> safetensors_index_shards(const std::string& index_path);
// Maps and parses one file.
Result<SafetensorsSet> load_safetensors_file(const std::string& path);

}  // namespace plimsoll
