// kiln::HostTensor (include/kiln/tensor.h).
#include "core/checked_math.h"
#include "core/dtype.h"

namespace kiln {

HostTensor HostTensor::zeros(std::string name, DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.data.assign(checked_mul(checked_numel(shape, "tensor"), dtype_size(dtype), "tensor bytes"), 0);
  t.shape = std::move(shape);
  return t;
}

HostTensor HostTensor::from_f32(std::string name, std::vector<int64_t> shape, const std::vector<float>& values) {
  HostTensor t = zeros(std::move(name), DType::F32, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "[tensor] {}: {} values for {} elements", t.name,
             values.size(), t.numel());
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

HostTensor HostTensor::from_i64(std::string name, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  HostTensor t = zeros(std::move(name), DType::I64, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "[tensor] {}: {} values for {} elements", t.name,
             values.size(), t.numel());
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

int64_t HostTensor::numel() const { return static_cast<int64_t>(checked_numel(shape, "tensor")); }

std::vector<float> HostTensor::to_f32() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  KILN_CHECK(data.size() == out.size() * dtype_size(dtype), "[tensor] {}: {} bytes for shape of {} elements", name,
             data.size(), out.size());
  convert_to_f32(dtype, data.data(), out.data(), numel());
  return out;
}

}  // namespace kiln
