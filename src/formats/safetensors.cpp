// safetensors parsing and validation (header, entries, offsets, coverage),
// and loading a single file or the shards of model.safetensors.index.json.
#include "formats/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "formats/json_file.h"

namespace plimsoll {
namespace {

using nlohmann::json;

constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr int64_t kMaxElems = int64_t{1} << 50;

Error invalid(const std::string& file, const std::string& problem) {
  return make_error(ErrorCode::kInvalidFile, file + ": " + problem);
}

struct Entry {
  SafetensorsTensor tensor;
  int64_t begin = 0, end = 0;  // relative to the data section
};

Result<DType> parse_dtype(const std::string& file, const std::string& name, const json& v) {
  if (!v.is_string()) return invalid(file, "tensor '" + name + "': field 'dtype' must be a string");
  const std::string s = v.get<std::string>();
  if (s == "F32") return DType::kF32;
  if (s == "F16") return DType::kF16;
  if (s == "BF16") return DType::kBF16;
  static const std::set<std::string> kKnown = {"F64", "I64", "I32", "I16", "I8", "U8", "BOOL",
                                               "U16", "U32", "U64", "F8_E4M3", "F8_E5M2"};
  if (kKnown.count(s)) {
    return make_error(ErrorCode::kUnsupported, file + ": tensor '" + name + "': field 'dtype' is " +
                                                   s + ", supported are F32, F16, BF16");
  }
  return invalid(file, "tensor '" + name + "': field 'dtype' is '" + s + "', not a safetensors dtype");
}

Result<std::vector<int64_t>> parse_shape(const std::string& file, const std::string& name,
                                         const json& v, int64_t* n_elems) {
  if (!v.is_array()) return invalid(file, "tensor '" + name + "': field 'shape' must be an array");
  std::vector<int64_t> shape;
  *n_elems = 1;
  for (const json& d : v) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(kMaxDim)) {
      return invalid(file, "tensor '" + name + "': field 'shape' has entry " + d.dump() +
                               ", must be an integer 0 to 2^40");
    }
    shape.push_back(d.get<int64_t>());
    if (shape.back() != 0 && *n_elems > kMaxElems / shape.back()) {
      return invalid(file, "tensor '" + name + "': field 'shape' has more than 2^50 elements");
    }
    *n_elems *= shape.back();
  }
  return shape;
}

Result<Entry> parse_entry(const std::string& file, const std::string& name, const json& v,
                          int64_t data_bytes) {
  if (!v.is_object()) return invalid(file, "tensor '" + name + "' must be a JSON object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(field)) return invalid(file, "tensor '" + name + "': missing field '" + field + "'");
  }
  Entry e;
  e.tensor.name = name;
  e.tensor.file = file;
  PLIMSOLL_ASSIGN(e.tensor.dtype, parse_dtype(file, name, v.at("dtype")));
  int64_t n_elems = 0;
  PLIMSOLL_ASSIGN(e.tensor.shape, parse_shape(file, name, v.at("shape"), &n_elems));
  const json& off = v.at("data_offsets");
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
      !off[1].is_number_unsigned()) {
    return invalid(file, "tensor '" + name + "': field 'data_offsets' must be two non-negative integers");
  }
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > static_cast<uint64_t>(data_bytes)) {
    return invalid(file, "tensor '" + name + "': field 'data_offsets' [" + std::to_string(begin) +
                             ", " + std::to_string(end) + "] is outside the data section of " +
                             std::to_string(data_bytes) + " bytes");
  }
  e.begin = static_cast<int64_t>(begin);
  e.end = static_cast<int64_t>(end);
  e.tensor.n_bytes = e.end - e.begin;
  const int64_t want = dtype_row_bytes(e.tensor.dtype, n_elems);
  if (want != e.tensor.n_bytes) {
    return invalid(file, "tensor '" + name + "': field 'data_offsets' spans " +
                             std::to_string(e.tensor.n_bytes) + " bytes, but dtype and shape need " +
                             std::to_string(want));
  }
  return e;
}

// Entries sorted by offset must tile the data section exactly.
Status check_coverage(const std::string& file, std::vector<Entry>& entries, int64_t data_bytes) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  int64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin < at) {
      return invalid(file, "tensor '" + e.tensor.name + "': field 'data_offsets' overlaps the tensor before it");
    }
    if (e.begin > at) {
      return invalid(file, "tensor '" + e.tensor.name + "': field 'data_offsets' leaves a hole of " +
                               std::to_string(e.begin - at) + " bytes before it");
    }
    at = e.end;
  }
  if (at != data_bytes) {
    return invalid(file, "the tensors cover " + std::to_string(at) + " of the " +
                             std::to_string(data_bytes) + " data bytes");
  }
  return {};
}

Result<int64_t> header_length(std::span<const std::byte> bytes, const std::string& file) {
  if (bytes.size() < 8) return invalid(file, "shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  if (n > static_cast<uint64_t>(kSafetensorsMaxHeaderBytes) || n > bytes.size() - 8) {
    return invalid(file, "header length " + std::to_string(n) + " exceeds the file (" +
                             std::to_string(bytes.size()) + " bytes) or 100 MiB");
  }
  return static_cast<int64_t>(n);
}

// The header parsed as JSON, refusing duplicate keys at the top level.
Result<json> parse_header(std::span<const std::byte> text, const std::string& file) {
  std::set<std::string> seen;
  std::string duplicate;
  const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth == 1 && event == json::parse_event_t::key && !seen.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  const char* begin = reinterpret_cast<const char*>(text.data());
  json root = json::parse(begin, begin + text.size(), on_event, /*allow_exceptions=*/false);
  if (root.is_discarded()) return invalid(file, "header is not valid JSON");
  if (!root.is_object()) return invalid(file, "header must be a JSON object");
  if (!duplicate.empty()) return invalid(file, "header names tensor '" + duplicate + "' twice");
  return root;
}

Status read_metadata(const std::string& file, const json& v, std::map<std::string, std::string>* out) {
  if (!v.is_object()) return invalid(file, "field '__metadata__' must be an object");
  for (const auto& [key, value] : v.items()) {
    if (!value.is_string()) return invalid(file, "field '__metadata__." + key + "' must be a string");
    if (out) (*out)[key] = value.get<std::string>();
  }
  return {};
}

}  // namespace

Result<std::vector<SafetensorsTensor>> parse_safetensors(std::span<const std::byte> bytes,
                                                          const std::string& file,
                                                          std::map<std::string, std::string>* metadata) {
  PLIMSOLL_ASSIGN(const int64_t n_header, header_length(bytes, file));
  PLIMSOLL_ASSIGN(const json root, parse_header(bytes.subspan(8, static_cast<size_t>(n_header)), file));
  const int64_t data_start = 8 + n_header;
  const int64_t data_bytes = static_cast<int64_t>(bytes.size()) - data_start;
  std::vector<Entry> entries;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      PLIMSOLL_TRY(read_metadata(file, value, metadata));
      continue;
    }
    PLIMSOLL_ASSIGN(Entry e, parse_entry(file, name, value, data_bytes));
    entries.push_back(std::move(e));
  }
  PLIMSOLL_TRY(check_coverage(file, entries, data_bytes));
  std::vector<SafetensorsTensor> out;
  for (Entry& e : entries) {
    e.tensor.data = bytes.data() + data_start + e.begin;
    out.push_back(std::move(e.tensor));
  }
  return out;
}

Result<SafetensorsSet> load_safetensors_file(const std::string& path) {
  PLIMSOLL_ASSIGN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  std::span<const std::byte> bytes(file->data(), static_cast<size_t>(file->size_bytes()));
  SafetensorsSet set;
  PLIMSOLL_ASSIGN(set.tensors, parse_safetensors(bytes, path));
  set.files.push_back(std::move(file));
  return set;
}

namespace {

// weight_map: tensor -> shard file name (a plain name inside the folder).
Result<std::map<std::string, std::string>> read_weight_map(const JsonFile& index) {
  if (!index.has("weight_map") || !index.root.at("weight_map").is_object()) {
    return index.field_error("weight_map", "must be an object of tensor name -> file name");
  }
  std::map<std::string, std::string> map;
  for (const auto& [tensor, file] : index.root.at("weight_map").items()) {
    if (!file.is_string()) return index.field_error("weight_map." + tensor, "must be a file name");
    const std::string f = file.get<std::string>();
    if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..") {
      return index.field_error("weight_map." + tensor, "names '" + f + "', not a file in the folder");
    }
    map[tensor] = f;
  }
  if (map.empty()) return index.field_error("weight_map", "is empty");
  return map;
}

Status check_shard(const JsonFile& index, const std::map<std::string, std::string>& map,
                   const std::string& shard, const SafetensorsSet& part) {
  for (const SafetensorsTensor& t : part.tensors) {
    auto it = map.find(t.name);
    if (it == map.end() || it->second != shard) {
      return index.field_error("weight_map", "does not place tensor '" + t.name + "' in " + shard +
                                                 ", where it is stored");
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::string>> safetensors_index_shards(const std::string& index_path) {
  PLIMSOLL_ASSIGN(const JsonFile index, read_json_file(index_path));
  PLIMSOLL_ASSIGN(const auto map, read_weight_map(index));
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : map) shards.insert(shard);
  return std::vector<std::string>(shards.begin(), shards.end());
}

Result<SafetensorsSet> load_safetensors_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string single = (fs::path(dir) / "model.safetensors").string();
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  std::error_code ec;
  if (!fs::exists(index_path, ec)) {
    if (!fs::exists(single, ec)) {
      return make_error(ErrorCode::kNotFound,
                        dir + ": has neither model.safetensors nor model.safetensors.index.json");
    }
    return load_safetensors_file(single);
  }
  PLIMSOLL_ASSIGN(const JsonFile index, read_json_file(index_path));
  PLIMSOLL_ASSIGN(const auto map, read_weight_map(index));
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : map) shards.insert(shard);
  SafetensorsSet set;
  std::set<std::string> loaded;
  for (const std::string& shard : shards) {
    PLIMSOLL_ASSIGN(SafetensorsSet part, load_safetensors_file((fs::path(dir) / shard).string()));
    PLIMSOLL_TRY(check_shard(index, map, shard, part));
    for (SafetensorsTensor& t : part.tensors) {
      loaded.insert(t.name);
      set.tensors.push_back(std::move(t));
    }
    for (auto& f : part.files) set.files.push_back(std::move(f));
  }
  for (const auto& [tensor, shard] : map) {
    if (!loaded.count(tensor)) {
      return index.field_error("weight_map", "places tensor '" + tensor + "' in " + shard +
                                                 ", which does not contain it");
    }
  }
  return set;
}

}  // namespace plimsoll
