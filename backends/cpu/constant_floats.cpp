#include "backends/cpu/constant_floats.h"

#include <cstdint>
#include <cstring>

namespace kiln::cpu {

ConstantFloats::ConstantFloats(const ConstantView& view) {
  if (view.dtype == DType::F32 && reinterpret_cast<uintptr_t>(view.bytes.data()) % alignof(float) == 0) {
    data_ = reinterpret_cast<const float*>(view.bytes.data());
    size_ = view.bytes.size() / sizeof(float);
  } else {
    view.to_f32(own(static_cast<size_t>(view.numel())));
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
