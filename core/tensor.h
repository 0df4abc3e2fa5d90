// The float tensor that build-time code passes around (weights after conversion, test
// references). Runtime activations live in backend-owned buffers, not here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/checked_math.h"

namespace kiln {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> s) : shape(std::move(s)) { data.assign(checked_numel(shape, "tensor"), 0.0f); }
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int64_t dim(size_t i) const { return shape.at(i); }
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace kiln
