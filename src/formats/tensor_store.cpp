// TensorStore: lookup by name with shape checks.
#include "formats/tensor_store.h"

namespace plimsoll {

const std::byte* TensorStore::adopt(std::vector<std::byte> buffer) {
  buffers_.push_back(std::make_unique<std::vector<std::byte>>(std::move(buffer)));
  return buffers_.back()->data();
}

Status TensorStore::add(TensorView view) {
  if (index_.count(view.name)) {
    return make_error(ErrorCode::kInvalidFile, "duplicate tensor '" + view.name + "'");
  }
  index_[view.name] = tensors_.size();
  tensors_.push_back(std::move(view));
  return {};
}

const TensorView* TensorStore::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Result<const TensorView*> TensorStore::get(const std::string& name,
                                           const std::vector<int64_t>& shape) const {
  const TensorView* t = find(name);
  if (!t) return make_error(ErrorCode::kNotFound, "missing tensor '" + name + "'");
  if (!shape.empty() && t->shape != shape) {
    return make_error(ErrorCode::kInvalidFile, "tensor '" + name + "' has shape " +
                                                   shape_to_string(t->shape) + ", expected " +
                                                   shape_to_string(shape));
  }
  return t;
}

int64_t TensorStore::resident_copy_bytes() const {
  auto inside = [](const std::byte* p, const std::byte* begin, size_t n) { return p >= begin && p < begin + n; };
  int64_t n = 0;
  for (const TensorView& t : tensors_) {
    bool copied = false;
    for (const auto& f : files_) {
      copied = copied || (f->backing() == FileBacking::kHugePageCopy &&
                          inside(t.data, f->data(), static_cast<size_t>(f->size_bytes())));
    }
    for (const auto& b : buffers_) copied = copied || inside(t.data, b->data(), b->size());
    if (copied) n += t.n_bytes;
  }
  return n;
}

int64_t TensorStore::total_bytes() const {
  int64_t n = 0;
  for (const TensorView& t : tensors_) n += t.n_bytes;
  return n;
}

}  // namespace plimsoll
