// How engines read weights by name, whatever holds them (a bundle, a model definition): fp32
// data with its shape.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace kiln {

struct WeightView {
  std::vector<int64_t> shape;
  std::span<const float> data;
};
using WeightLookup = std::function<WeightView(const std::string&)>;

}  // namespace kiln
