// GGUF parsing and validation: header, typed metadata (nested arrays), tensor
// infos, data-section bounds and alignment. Every count is bounded by the bytes left.
#include "formats/gguf.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <type_traits>

#include "formats/byte_reader.h"

namespace plimsoll {
namespace {

constexpr std::array<char, 4> kMagic = {'G', 'G', 'U', 'F'};
constexpr uint32_t kMaxType = 12;

// The fewest bytes one value of `type` occupies in a file (bounds array counts).
uint64_t min_value_bytes(GgufType type) {
  switch (type) {
    case GgufType::kU8: case GgufType::kI8: case GgufType::kBool: return 1;
    case GgufType::kU16: case GgufType::kI16: return 2;
    case GgufType::kU32: case GgufType::kI32: case GgufType::kF32: return 4;
    case GgufType::kU64: case GgufType::kI64: case GgufType::kF64: return 8;
    case GgufType::kString: return 8;       // u64 length
    case GgufType::kArray: return 4 + 8;    // element type + count
  }
  return 1;
}

Result<GgufType> read_type(ByteReader& r, const std::string& key) {
  PLIMSOLL_ASSIGN(const uint32_t raw, r.read_u32("value type of '" + key + "'"));
  if (raw > kMaxType) {
    return r.error(ErrorCode::kInvalidFile,
                   "key '" + key + "' has unknown value type " + std::to_string(raw));
  }
  return static_cast<GgufType>(raw);
}

template <typename T>
Result<std::vector<T>> read_pod_array(ByteReader& r, uint64_t count, const std::string& key) {
  PLIMSOLL_ASSIGN(auto raw, r.read_bytes(count * sizeof(T), "array '" + key + "'"));
  std::vector<T> out(static_cast<size_t>(count));
  if (count) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

// Reserves room for `count` elements, but never more bytes than the file has left:
// a count is only a claim until its elements parse (an array of n empty strings takes
// 8n bytes of file and 32n bytes of std::string), so a hostile count allocates nothing.
template <typename T>
void reserve_within_file(std::vector<T>& v, uint64_t count, const ByteReader& r) {
  const uint64_t affordable = static_cast<uint64_t>(r.remaining_bytes()) / sizeof(T);
  v.reserve(static_cast<size_t>(std::min(count, affordable)));
}

Result<bool> read_bool(ByteReader& r, const std::string& key) {
  PLIMSOLL_ASSIGN(const uint8_t b, r.read<uint8_t>("bool '" + key + "'"));
  if (b > 1) {
    return r.error(ErrorCode::kInvalidFile,
                   "key '" + key + "' has bool value " + std::to_string(b) + ", not 0 or 1");
  }
  return b == 1;
}

Result<std::string> read_value_string(ByteReader& r, const std::string& key) {
  return r.read_string("string value of '" + key + "'", std::numeric_limits<uint64_t>::max());
}

Result<GgufArray> read_array(ByteReader& r, int depth, const std::string& key) {
  if (depth >= kGgufMaxArrayDepth) {
    return r.error(ErrorCode::kInvalidFile, "key '" + key + "' nests arrays deeper than " +
                                                std::to_string(kGgufMaxArrayDepth));
  }
  PLIMSOLL_ASSIGN(const GgufType elem, read_type(r, key));
  PLIMSOLL_ASSIGN(const uint64_t count, r.read_u64("array length of '" + key + "'"));
  const uint64_t max_count = static_cast<uint64_t>(r.remaining_bytes()) / min_value_bytes(elem);
  if (count > max_count) {
    return r.error(ErrorCode::kInvalidFile, "key '" + key + "' claims " + std::to_string(count) +
                                                " array elements of " + std::string(gguf_type_name(elem)) +
                                                ", but only " + std::to_string(r.remaining_bytes()) +
                                                " bytes are left (at most " + std::to_string(max_count) + ")");
  }
  GgufArray a;
  switch (elem) {
#define PLIMSOLL_POD_CASE(TYPE, CTYPE)                                   \
  case GgufType::TYPE: {                                                 \
    PLIMSOLL_ASSIGN(auto v, read_pod_array<CTYPE>(r, count, key));       \
    a.items.emplace<static_cast<size_t>(GgufType::TYPE)>(std::move(v));  \
    break;                                                               \
  }
    PLIMSOLL_POD_CASE(kU8, uint8_t)
    PLIMSOLL_POD_CASE(kI8, int8_t)
    PLIMSOLL_POD_CASE(kU16, uint16_t)
    PLIMSOLL_POD_CASE(kI16, int16_t)
    PLIMSOLL_POD_CASE(kU32, uint32_t)
    PLIMSOLL_POD_CASE(kI32, int32_t)
    PLIMSOLL_POD_CASE(kF32, float)
    PLIMSOLL_POD_CASE(kU64, uint64_t)
    PLIMSOLL_POD_CASE(kI64, int64_t)
    PLIMSOLL_POD_CASE(kF64, double)
#undef PLIMSOLL_POD_CASE
    case GgufType::kBool: {
      std::vector<bool> v(static_cast<size_t>(count));
      for (uint64_t i = 0; i < count; ++i) {
        PLIMSOLL_ASSIGN(v[i], read_bool(r, key));
      }
      a.items = std::move(v);
      break;
    }
    case GgufType::kString: {
      std::vector<std::string> v;
      reserve_within_file(v, count, r);
      for (uint64_t i = 0; i < count; ++i) {
        PLIMSOLL_ASSIGN(std::string s, read_value_string(r, key));
        v.push_back(std::move(s));
      }
      a.items = std::move(v);
      break;
    }
    case GgufType::kArray: {
      std::vector<GgufArray> v;
      reserve_within_file(v, count, r);
      for (uint64_t i = 0; i < count; ++i) {
        PLIMSOLL_ASSIGN(GgufArray inner, read_array(r, depth + 1, key));
        v.push_back(std::move(inner));
      }
      a.items = std::move(v);
      break;
    }
  }
  return a;
}

template <GgufType kType, typename T>
Result<GgufValue> read_scalar(ByteReader& r, const std::string& key) {
  PLIMSOLL_ASSIGN(const T v, r.read<T>("value of '" + key + "'"));
  return GgufValue(std::in_place_index<static_cast<size_t>(kType)>, v);
}

Result<GgufValue> read_value(ByteReader& r, GgufType type, int depth, const std::string& key) {
  switch (type) {
    case GgufType::kU8: return read_scalar<GgufType::kU8, uint8_t>(r, key);
    case GgufType::kI8: return read_scalar<GgufType::kI8, int8_t>(r, key);
    case GgufType::kU16: return read_scalar<GgufType::kU16, uint16_t>(r, key);
    case GgufType::kI16: return read_scalar<GgufType::kI16, int16_t>(r, key);
    case GgufType::kU32: return read_scalar<GgufType::kU32, uint32_t>(r, key);
    case GgufType::kI32: return read_scalar<GgufType::kI32, int32_t>(r, key);
    case GgufType::kF32: return read_scalar<GgufType::kF32, float>(r, key);
    case GgufType::kU64: return read_scalar<GgufType::kU64, uint64_t>(r, key);
    case GgufType::kI64: return read_scalar<GgufType::kI64, int64_t>(r, key);
    case GgufType::kF64: return read_scalar<GgufType::kF64, double>(r, key);
    case GgufType::kBool: {
      PLIMSOLL_ASSIGN(const bool b, read_bool(r, key));
      return GgufValue(b);
    }
    case GgufType::kString: {
      PLIMSOLL_ASSIGN(std::string s, read_value_string(r, key));
      return GgufValue(std::move(s));
    }
    case GgufType::kArray: {
      PLIMSOLL_ASSIGN(GgufArray a, read_array(r, depth, key));
      return GgufValue(std::move(a));
    }
  }
  return r.error(ErrorCode::kInternal, "unhandled value type");
}

struct Header {
  uint32_t version = 0;
  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
};

Result<Header> read_header(ByteReader& r) {
  PLIMSOLL_ASSIGN(auto magic, r.read_bytes(4, "magic"));
  if (std::memcmp(magic.data(), kMagic.data(), 4) != 0) {
    return r.error(ErrorCode::kInvalidFile, "bad magic: not a GGUF file");
  }
  Header h;
  PLIMSOLL_ASSIGN(h.version, r.read_u32("version"));
  if (h.version != 2 && h.version != 3) {
    return r.error(ErrorCode::kUnsupported,
                   "unsupported GGUF version " + std::to_string(h.version) + " (need 2 or 3)");
  }
  PLIMSOLL_ASSIGN(h.tensor_count, r.read_u64("tensor count"));
  PLIMSOLL_ASSIGN(h.kv_count, r.read_u64("metadata count"));
  // Smallest possible entries: a kv is key length + type + 1 byte; a tensor
  // info is name length + n_dims + one dim + type + offset.
  const uint64_t left = static_cast<uint64_t>(r.remaining_bytes());
  if (h.kv_count > left / 13) {
    return r.error(ErrorCode::kInvalidFile, "metadata count " + std::to_string(h.kv_count) +
                                                " cannot fit in the " + std::to_string(left) +
                                                " bytes left");
  }
  if (h.tensor_count > left / 32) {
    return r.error(ErrorCode::kInvalidFile, "tensor count " + std::to_string(h.tensor_count) +
                                                " cannot fit in the " + std::to_string(left) +
                                                " bytes left");
  }
  return h;
}

Status read_metadata(ByteReader& r, uint64_t kv_count, GgufFile& out) {
  std::set<std::string> seen;
  for (uint64_t i = 0; i < kv_count; ++i) {
    PLIMSOLL_ASSIGN(std::string key, r.read_string("metadata key", kGgufMaxKeyBytes));
    if (!seen.insert(key).second) {
      return r.error(ErrorCode::kInvalidFile, "duplicate metadata key '" + key + "'");
    }
    PLIMSOLL_ASSIGN(const GgufType type, read_type(r, key));
    PLIMSOLL_ASSIGN(GgufValue value, read_value(r, type, 0, key));
    out.metadata.push_back(GgufKv{std::move(key), std::move(value)});
  }
  return {};
}

Status set_alignment(const ByteReader& r, GgufFile& out) {
  if (!out.find("general.alignment")) return {};
  PLIMSOLL_ASSIGN(const int64_t align, out.get_int("general.alignment"));
  if (align <= 0 || align > (int64_t{1} << 30) || (align & (align - 1)) != 0) {
    return r.error(ErrorCode::kInvalidFile, "general.alignment " + std::to_string(align) +
                                                " is not a power of two up to 2^30");
  }
  out.alignment_bytes = align;
  return {};
}

// The tensor's dtype, or an error naming its ggml type.
Result<DType> tensor_dtype(const ByteReader& r, const std::string& name, uint32_t ggml_type) {
  if (std::optional<DType> dt = dtype_from_ggml(ggml_type)) return *dt;
  if (ggml_type_name(ggml_type) == "unknown") {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + name + "' has unknown type id " +
                                                std::to_string(ggml_type));
  }
  return r.error(ErrorCode::kUnsupported, "tensor '" + name + "' has type " +
                                              std::string(ggml_type_name(ggml_type)) +
                                              ", not supported");
}

Status set_tensor_geometry(const ByteReader& r, GgufTensorInfo& t) {
  int64_t n_elems = 1;
  for (int64_t d : t.ne) {
    if (!checked_mul(n_elems, d, &n_elems)) {
      return r.error(ErrorCode::kInvalidFile,
                     "tensor '" + t.name + "' has too many elements (overflow)");
    }
  }
  const DTypeTraits& traits = dtype_traits(t.dtype);
  if (t.ne[0] % traits.block_elems != 0) {
    return r.error(ErrorCode::kInvalidFile,
                   "tensor '" + t.name + "' has row length " + std::to_string(t.ne[0]) +
                       ", not a multiple of the block size " +
                       std::to_string(traits.block_elems) + " of " +
                       std::string(ggml_type_name(t.ggml_type)));
  }
  if (!checked_mul(n_elems / traits.block_elems, traits.block_bytes, &t.n_bytes)) {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' is too large (overflow)");
  }
  return {};
}

Result<GgufTensorInfo> read_tensor_info(ByteReader& r) {
  GgufTensorInfo t;
  PLIMSOLL_ASSIGN(t.name, r.read_string("tensor name", kGgufMaxTensorNameBytes));
  PLIMSOLL_ASSIGN(const uint32_t n_dims, r.read_u32("n_dims of '" + t.name + "'"));
  if (n_dims == 0 || n_dims > kGgufMaxDims) {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' has " +
                                                std::to_string(n_dims) +
                                                " dimensions, must be 1 to 4");
  }
  for (uint32_t i = 0; i < n_dims; ++i) {
    PLIMSOLL_ASSIGN(const uint64_t d, r.read_u64("dimension of '" + t.name + "'"));
    if (d == 0 || d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' has dimension " +
                                                  std::to_string(d) + " (must be 1 to 2^63-1)");
    }
    t.ne.push_back(static_cast<int64_t>(d));
  }
  t.shape.assign(t.ne.rbegin(), t.ne.rend());
  PLIMSOLL_ASSIGN(t.ggml_type, r.read_u32("type of '" + t.name + "'"));
  PLIMSOLL_ASSIGN(t.dtype, tensor_dtype(r, t.name, t.ggml_type));
  PLIMSOLL_TRY(set_tensor_geometry(r, t));
  PLIMSOLL_ASSIGN(const uint64_t offset, r.read_u64("offset of '" + t.name + "'"));
  if (offset > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' has offset " +
                                                std::to_string(offset) + ", outside the file");
  }
  t.offset_bytes = static_cast<int64_t>(offset);
  return t;
}

// Element alignment kernels rely on when they read the data in place.
int64_t dtype_alignment_bytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

Status place_tensor(const ByteReader& r, const GgufFile& f, int64_t file_size,
                    GgufTensorInfo& t) {
  if (t.offset_bytes % f.alignment_bytes != 0) {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' offset " +
                                                std::to_string(t.offset_bytes) +
                                                " is not a multiple of the alignment " +
                                                std::to_string(f.alignment_bytes));
  }
  int64_t end = 0;
  if (!checked_add(f.data_offset_bytes, t.offset_bytes, &t.file_offset_bytes) ||
      !checked_add(t.file_offset_bytes, t.n_bytes, &end) || end > file_size) {
    return r.error(ErrorCode::kInvalidFile,
                   "tensor '" + t.name + "' data (offset " + std::to_string(t.offset_bytes) +
                       ", " + std::to_string(t.n_bytes) + " bytes) lies outside the file of " +
                       std::to_string(file_size) + " bytes");
  }
  if (t.file_offset_bytes % dtype_alignment_bytes(t.dtype) != 0) {
    return r.error(ErrorCode::kInvalidFile, "tensor '" + t.name + "' data at byte " +
                                                std::to_string(t.file_offset_bytes) +
                                                " is misaligned for its type");
  }
  return {};
}

Status read_tensor_infos(ByteReader& r, uint64_t tensor_count, GgufFile& out) {
  std::set<std::string> seen;
  for (uint64_t i = 0; i < tensor_count; ++i) {
    PLIMSOLL_ASSIGN(GgufTensorInfo t, read_tensor_info(r));
    if (!seen.insert(t.name).second) {
      return r.error(ErrorCode::kInvalidFile, "duplicate tensor '" + t.name + "'");
    }
    out.tensors.push_back(std::move(t));
  }
  return {};
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  static constexpr std::array<std::string_view, 13> kNames = {
      "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64",
      "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < kNames.size() ? kNames[i] : "unknown";
}

size_t GgufArray::size() const {
  return std::visit([](const auto& v) { return v.size(); }, items);
}

bool has_gguf_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic.data(), 4) == 0;
}

Result<GgufFile> parse_gguf(std::span<const std::byte> bytes, const std::string& name) {
  ByteReader r(bytes, name);
  GgufFile f;
  f.name = name;
  PLIMSOLL_ASSIGN(const Header h, read_header(r));
  f.version = h.version;
  PLIMSOLL_TRY(read_metadata(r, h.kv_count, f));
  PLIMSOLL_TRY(set_alignment(r, f));
  PLIMSOLL_TRY(read_tensor_infos(r, h.tensor_count, f));
  const int64_t header_end = r.offset_bytes();
  f.data_offset_bytes = (header_end + f.alignment_bytes - 1) / f.alignment_bytes * f.alignment_bytes;
  const auto file_size = static_cast<int64_t>(bytes.size());
  for (GgufTensorInfo& t : f.tensors) PLIMSOLL_TRY(place_tensor(r, f, file_size, t));
  return f;
}

Result<GgufFile> parse_gguf(const MappedFile& file) {
  return parse_gguf(std::span<const std::byte>(file.data(), static_cast<size_t>(file.size_bytes())),
                    file.path());
}

// ---- GgufFile lookups ----

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const GgufKv& kv : metadata) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view tensor_name) const {
  for (const GgufTensorInfo& t : tensors) {
    if (t.name == tensor_name) return &t;
  }
  return nullptr;
}

Error GgufFile::key_error(std::string_view key, const std::string& problem) const {
  return make_error(ErrorCode::kInvalidFile, name + ": key '" + std::string(key) + "' " + problem);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, name + ": missing key '" + std::string(key) + "'");
  return std::visit(
      [&](const auto& x) -> Result<int64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if constexpr (std::is_same_v<T, uint64_t>) {
            if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              return key_error(key, "value " + std::to_string(x) + " is out of range");
            }
          }
          return static_cast<int64_t>(x);
        } else {
          return key_error(key, "has type " + std::string(gguf_type_name(gguf_type_of(*v))) +
                                    ", expected an integer");
        }
      },
      *v);
}

Result<int64_t> GgufFile::get_int_or(std::string_view key, int64_t fallback) const {
  if (!find(key)) return fallback;
  return get_int(key);
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, name + ": missing key '" + std::string(key) + "'");
  if (const float* f = std::get_if<float>(v)) return static_cast<double>(*f);
  if (const double* d = std::get_if<double>(v)) return *d;
  return key_error(key, "has type " + std::string(gguf_type_name(gguf_type_of(*v))) +
                            ", expected f32 or f64");
}

Result<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  if (!find(key)) return fallback;
  return get_float(key);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  const GgufValue* v = find(key);
  if (!v) return fallback;
  if (const bool* b = std::get_if<bool>(v)) return *b;
  return key_error(key, "has type " + std::string(gguf_type_name(gguf_type_of(*v))) +
                            ", expected bool");
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, name + ": missing key '" + std::string(key) + "'");
  if (const std::string* s = std::get_if<std::string>(v)) return *s;
  return key_error(key, "has type " + std::string(gguf_type_name(gguf_type_of(*v))) +
                            ", expected string");
}

Result<const GgufArray*> GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return make_error(ErrorCode::kNotFound, name + ": missing key '" + std::string(key) + "'");
  if (const GgufArray* a = std::get_if<GgufArray>(v)) return a;
  return key_error(key, "has type " + std::string(gguf_type_name(gguf_type_of(*v))) +
                            ", expected array");
}

}  // namespace plimsoll
