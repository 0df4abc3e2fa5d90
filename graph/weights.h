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

// An FP8 weight's values: its stored E4M3 values times the scale of their output channel
// (scale [out]; each output channel's values are contiguous).
inline std::vector<float> dequantize_per_channel(const WeightView& w, const WeightView& scale) {
  std::vector<float> out(w.data.size());
  const size_t per_out = w.data.size() / scale.data.size();
  for (size_t i = 0; i < out.size(); ++i) out[i] = w.data[i] * scale.data[i / per_out];
  return out;
}

}  // namespace kiln
