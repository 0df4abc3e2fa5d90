// A constant as f32 for a CPU kernel that keeps or packs it: the lookup's own bytes where they are
// f32 already (no copy: an engine keeps its lookup, and with it the bundle the bytes are in),
// else a widened copy (f16 and E4M3 weights). A model's weights were otherwise copied once more
// by each kernel, and a one-sentence translation spent most of its time copying them.
#pragma once

#include <cstddef>
#include <vector>

#include "backends/backend.h"

namespace kiln::cpu {

class ConstantFloats {
 public:
  ConstantFloats() = default;
  explicit ConstantFloats(const ConstantView& view);
  ConstantFloats(ConstantFloats&&) = default;
  ConstantFloats& operator=(ConstantFloats&&) = default;

  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // The values as a copy the kernel may change (FP8 weights scaled per channel).
  std::vector<float>& owned();

 private:
  const float* data_ = nullptr;
  size_t size_ = 0;
  std::vector<float> owned_;  // where data_ points when the bytes could not be used as they are
};

}  // namespace kiln::cpu
