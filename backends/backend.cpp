#include "backends/backend.h"

#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

// Defined in backends/cuda/ (or backends/no_cuda/ in builds without CUDA).
bool cuda_backend_available();
std::shared_ptr<Backend> make_cuda_backend(const std::string& precision);

int64_t TensorRef::numel() const { return static_cast<int64_t>(checked_numel(shape, "tensor")); }
size_t TensorRef::bytes() const { return checked_mul(numel(), dtype_size(dtype), "tensor bytes"); }

int64_t ConstantView::numel() const {
  const int64_t n = static_cast<int64_t>(checked_numel(shape, "constant"));
  KILN_CHECK(bytes.size() == static_cast<size_t>(n) * dtype_size(dtype), "[engine] constant of {} bytes for shape {}",
             bytes.size(), to_string(shape));
  return n;
}

void ConstantView::to_f32(float* out) const { convert_to_f32(dtype, bytes.data(), out, numel()); }

std::vector<float> ConstantView::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  to_f32(out.data());
  return out;
}

bool cuda_available() { return cuda_backend_available(); }

std::shared_ptr<Backend> make_backend(const std::string& name, const std::string& precision) {
  KILN_CHECK(name == "cuda", "[engine] unknown backend '{}'", name);
  KILN_CHECK(cuda_backend_available(), "[engine] no usable CUDA GPU (or kiln was built without CUDA)");
  return make_cuda_backend(precision);
}

}  // namespace kiln
