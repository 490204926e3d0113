// GGUF v3 serialisation: header and metadata built in memory, tensor data
// streamed tensor by tensor to path.tmp, which is fsync'ed and renamed.
#include "formats/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "core/stop_signals.h"
#include "core/tensor.h"
#include "formats/byte_reader.h"

namespace plimsoll {
namespace {

int64_t align_up(int64_t n, int64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

template <typename T>
void put(std::string& out, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  out.append(raw, sizeof(T));
}

void put_string(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

void put_array(std::string& out, const GgufArray& a);

template <typename T>
void put_item(std::string& out, const T& x) {
  if constexpr (std::is_same_v<T, std::string>) {
    put_string(out, x);
  } else if constexpr (std::is_same_v<T, GgufArray>) {
    put_array(out, x);
  } else if constexpr (std::is_same_v<T, bool>) {
    put<uint8_t>(out, x ? 1 : 0);
  } else {
    put<T>(out, x);
  }
}

void put_array(std::string& out, const GgufArray& a) {
  put<uint32_t>(out, static_cast<uint32_t>(a.elem_type()));
  put<uint64_t>(out, a.size());
  std::visit(
      [&](const auto& items) {
        for (const auto& x : items) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<std::vector<T>, std::vector<bool>>) {
            put_item<bool>(out, static_cast<bool>(x));
          } else {
            put_item<T>(out, x);
          }
        }
      },
      a.items);
}

void put_value(std::string& out, const GgufValue& v) {
  put<uint32_t>(out, static_cast<uint32_t>(gguf_type_of(v)));
  std::visit([&](const auto& x) { put_item<std::decay_t<decltype(x)>>(out, x); }, v);
}

// An open file descriptor closed on destruction, with whole-buffer writes.
class OutFile {
 public:
  explicit OutFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  ~OutFile() { close_fd(); }
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;

  Status opened() const { return fd_ >= 0 ? Status() : os_error("cannot create"); }

  Status write_all(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return os_error("cannot write");
      p += w;
      n -= static_cast<size_t>(w);
    }
    return {};
  }


  Status sync_and_close() {
    if (::fsync(fd_) != 0) return os_error("cannot fsync");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return os_error("cannot close");
    return {};
  }

 private:
  Error os_error(const char* what) const {
    return make_error(ErrorCode::kIo, path_ + ": " + what + ": " + std::strerror(errno));
  }
  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  std::string path_;
  int fd_ = -1;
};

}  // namespace

Status GgufWriter::set(const std::string& key, GgufValue value) {
  if (key.empty() || key.size() > kGgufMaxKeyBytes) {
    return make_error(ErrorCode::kInvalidArgument, "GGUF key must be 1 to 65535 bytes");
  }
  if (key == "general.alignment") {
    return make_error(ErrorCode::kInvalidArgument,
                      "general.alignment is set by the writer (always 32)");
  }
  for (GgufKv& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return {};
    }
  }
  metadata_.push_back(GgufKv{key, std::move(value)});
  return {};
}

Result<int64_t> GgufWriter::check_tensor(const std::string& name, DType dtype,
                                         const std::vector<int64_t>& shape) const {
  auto bad = [&](const std::string& problem) {
    return make_error(ErrorCode::kInvalidArgument, "tensor '" + name + "': " + problem);
  };
  if (name.empty() || name.size() >= kGgufMaxTensorNameBytes) {
    return bad("name must be 1 to 63 bytes");
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) return bad("added twice");
  }
  if (shape.empty() || shape.size() > kGgufMaxDims) return bad("must have 1 to 4 dimensions");
  int64_t n_elems = 1;
  for (int64_t d : shape) {
    if (d < 1 || !checked_mul(n_elems, d, &n_elems)) return bad("bad shape " + shape_to_string(shape));
  }
  const DTypeTraits& traits = dtype_traits(dtype);
  if (shape.back() % traits.block_elems != 0) {
    return bad("row length " + std::to_string(shape.back()) + " is not a multiple of " +
               std::to_string(traits.block_elems));
  }
  int64_t n_bytes = 0;
  if (!checked_mul(n_elems / traits.block_elems, traits.block_bytes, &n_bytes)) {
    return bad("too large");
  }
  return n_bytes;
}

Status GgufWriter::push_tensor(Tensor t) {
  t.offset_bytes = align_up(data_bytes_, kAlignmentBytes);
  data_bytes_ = t.offset_bytes + t.n_bytes;
  tensors_.push_back(std::move(t));
  return {};
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype,
                              const std::vector<int64_t>& shape, std::span<const std::byte> bytes) {
  PLIMSOLL_ASSIGN(const int64_t n_bytes, check_tensor(name, dtype, shape));
  if (static_cast<int64_t>(bytes.size()) != n_bytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor '" + name + "': " + std::to_string(bytes.size()) +
                          " bytes given, its shape needs " + std::to_string(n_bytes));
  }
  return push_tensor(Tensor{name, dtype, shape, n_bytes, 0, bytes, nullptr});
}

Status GgufWriter::add_tensor(const std::string& name, DType dtype,
                              const std::vector<int64_t>& shape, TensorProducer producer) {
  PLIMSOLL_ASSIGN(const int64_t n_bytes, check_tensor(name, dtype, shape));
  if (!producer) return make_error(ErrorCode::kInvalidArgument, "tensor '" + name + "': no producer");
  return push_tensor(Tensor{name, dtype, shape, n_bytes, 0, {}, std::move(producer)});
}

std::string GgufWriter::header_bytes() const {
  std::string out = "GGUF";
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, metadata_.size());
  for (const GgufKv& kv : metadata_) {
    put_string(out, kv.key);
    put_value(out, kv.value);
  }
  for (const Tensor& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<uint64_t>(out, *it);
    put<uint32_t>(out, dtype_traits(t.dtype).ggml_type);
    put<uint64_t>(out, t.offset_bytes);
  }
  out.resize(align_up(static_cast<int64_t>(out.size()), kAlignmentBytes), '\0');
  return out;
}

Status GgufWriter::emit(const Sink& sink) const {
  static const std::byte kZeros[kAlignmentBytes] = {};
  const std::string header = header_bytes();
  PLIMSOLL_TRY(sink(reinterpret_cast<const std::byte*>(header.data()), header.size()));
  int64_t pos = 0;
  std::vector<std::byte> buffer;
  for (const Tensor& t : tensors_) {
    PLIMSOLL_TRY(sink(kZeros, static_cast<size_t>(t.offset_bytes - pos)));
    std::span<const std::byte> bytes = t.bytes;
    if (t.producer) {
      buffer.assign(static_cast<size_t>(t.n_bytes), std::byte{0});
      Status produced = t.producer(std::span<std::byte>(buffer));
      if (!produced.ok()) return produced.error().with_context("tensor '" + t.name + "'");
      bytes = buffer;
    }
    PLIMSOLL_TRY(sink(bytes.data(), bytes.size()));
    pos = t.offset_bytes + t.n_bytes;
  }
  return {};
}

Result<std::vector<std::byte>> GgufWriter::to_bytes() const {
  std::vector<std::byte> out;
  PLIMSOLL_TRY(emit([&](const std::byte* data, size_t n) -> Status {
    out.insert(out.end(), data, data + n);
    return {};
  }));
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  Status s = [&]() -> Status {
    OutFile f(tmp);
    PLIMSOLL_TRY(f.opened());
    PLIMSOLL_TRY(emit([&](const std::byte* data, size_t n) -> Status {
      if (stop_requested()) {  // only under catch_stop_signals(): the partial .tmp is removed below
        return make_error(ErrorCode::kCancelled,
                          path + ": stopped by " + stop_signal_name() + " before it was complete; nothing written");
      }
      return f.write_all(data, n);
    }));
    return f.sync_and_close();
  }();
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    s = make_error(ErrorCode::kIo, path + ": cannot rename from .tmp: " + std::strerror(errno));
  }
  if (!s.ok()) std::remove(tmp.c_str());
  return s;
}

}  // namespace plimsoll
