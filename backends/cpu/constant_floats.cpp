#include "backends/cpu/constant_floats.h"

#include <cstdint>

namespace kiln::cpu {

ConstantFloats::ConstantFloats(const ConstantView& view) {
  if (view.dtype == DType::F32 && reinterpret_cast<uintptr_t>(view.bytes.data()) % alignof(float) == 0) {
    data_ = reinterpret_cast<const float*>(view.bytes.data());
    size_ = view.bytes.size() / sizeof(float);
  } else {
    owned_ = view.to_f32();
    data_ = owned_.data();
    size_ = owned_.size();
  }
}

std::vector<float>& ConstantFloats::owned() {
  if (owned_.empty() && size_ > 0) {
    owned_.assign(data_, data_ + size_);
    data_ = owned_.data();
  }
  return owned_;
}

}  // namespace kiln::cpu
