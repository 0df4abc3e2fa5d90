// A constant as f32 for a CPU kernel that keeps or packs it: the lookup's own bytes where they are
// f32 already (no copy: an engine keeps its lookup, and with it the bundle the bytes are in),
// else a widened copy (f16 and E4M3 weights). A model's weights were otherwise copied once more
// by each kernel, and a one-sentence translation spent most of its time copying them.
#pragma once

#include <cstddef>
#include <span>

#include "backends/backend.h"
#include "backends/cpu/pages.h"

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
  std::span<float> owned();

 private:
  float* own(size_t n);  // owned_ for n values, not zeroed (they are written next)

  const float* data_ = nullptr;
  size_t size_ = 0;
  // Where data_ points when the bytes could not be used as they are: widened once at a model's
  // first call, so in memory of its own (cpu/pages.h) rather than a zero-filled vector.
  PageBuffer owned_;
};

}  // namespace kiln::cpu
