// Static FP8 calibration and quantisation. Activation ranges are collected on the CPU engine
// (fp32) over calibration images; each selected conv's input gets one scale (max, a percentile,
// or the clip that minimises the E4M3 rounding error), each output channel of its weight another.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "backends/engine.h"
#include "graph/model_definition.h"
#include "quantize/recipe.h"
#include "tasks/classification/preprocess.h"

namespace kiln {

struct CalibrationOptions {
  std::string data;  // see datasets/image_dataset.h
  size_t samples = 500;
  std::string method;  // overrides the recipe's when set
  int batch = 16;
};

// Clip value (|x| at which E4M3 saturates) of each node's input, by node index.
std::map<int, float> calibrate_activations(const ModelDefinition& def, const std::vector<int>& nodes,
                                           const classification::PreprocessConfig& pre, const QuantRecipe& recipe,
                                           const CalibrationOptions& options);

// Picks the clip from a histogram of |x| (8192 bins: exponent and top 5 mantissa bits).
struct AbsHistogram {
  std::vector<uint64_t> bins = std::vector<uint64_t>(8192, 0);
  float max = 0;
  void add(const float* x, int64_t n);
  float clip(const std::string& method, double percentile) const;
};

// Turns the nodes into FP8 layers: inputs get scale clip / 448; weights (where the layer says so)
// become E4M3 values with per-output-channel scales amax / 448.
void apply_fp8(ModelDefinition& def, const std::vector<Fp8Layer>& layers, const std::map<int, float>& clips);

}  // namespace kiln
