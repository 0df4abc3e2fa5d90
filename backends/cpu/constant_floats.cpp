#include "backends/cpu/constant_floats.h"

#include <cstdint>
#include <cstring>

#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"

namespace kiln::cpu {

ConstantFloats::ConstantFloats(const ConstantView& view) {
  if (view.dtype == DType::F32 && reinterpret_cast<uintptr_t>(view.bytes.data()) % alignof(float) == 0) {
    data_ = reinterpret_cast<const float*>(view.bytes.data());
    size_ = view.bytes.size() / sizeof(float);
  } else {
    const int64_t n = static_cast<int64_t>(checked_numel(view.shape, "constant"));
    KILN_CHECK(view.bytes.size() == static_cast<size_t>(n) * dtype_size(view.dtype),
               "[engine] constant of {} bytes for shape {}", view.bytes.size(), to_string(view.shape));
    convert_to_f32(view.dtype, view.bytes.data(), own(static_cast<size_t>(n)), n);
  }
}

float* ConstantFloats::own(size_t n) {
  owned_.reset(static_cast<float*>(allocate_pages(n * sizeof(float))));
  data_ = static_cast<const float*>(owned_.get());
  size_ = n;
  return static_cast<float*>(owned_.get());
}

std::span<float> ConstantFloats::owned() {
  if (!owned_ && size_ > 0) {
    const float* from = data_;
    std::memcpy(own(size_), from, size_ * sizeof(float));
  }
  return {static_cast<float*>(owned_.get()), size_};
}

}  // namespace kiln::cpu
