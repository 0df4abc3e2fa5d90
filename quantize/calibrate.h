// Static FP8 calibration and quantisation. Activation ranges are collected on the CPU reference
// engine (fp32) over calibration data (images, or text for an encoder-decoder:
// calibrate_text.h); each selected layer's input gets one scale (max, a percentile, or the clip
// that minimises the E4M3 rounding error), each output channel of its weight another.
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
  std::string data;  // see datasets/image_dataset.h; text: a file of one sentence a line
  size_t samples = 500;
  std::string method;  // overrides the recipe's when set
  int batch = 16;
};

// Clip values (|x| at which E4M3 saturates) of the layers' inputs, by Fp8Layer::weight: a layer
// that several graphs hold (a decoder step with and without its top-k) gets one clip from all
// the inputs it saw. Image models: the layers of the main graph over calibration images.
using Fp8Clips = std::map<std::string, float>;
Fp8Clips calibrate_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                               const classification::PreprocessConfig& pre, const QuantRecipe& recipe,
                               const CalibrationOptions& options);

// Picks the clip from a histogram of |x| (8192 bins: exponent and top 5 mantissa bits).
struct AbsHistogram {
  std::vector<uint64_t> bins = std::vector<uint64_t>(8192, 0);
  float max = 0;
  uint64_t seen = 0;  // values added
  void add(const float* x, int64_t n);
  float clip(const std::string& method, double percentile) const;
};
// Makes `engine` (the reference kernels over `graph` as built, so that its node indices are the
// definition's) add each selected layer's input to hist[layer.weight] as it runs; every layer
// must be in `graph`. `hist` must outlive the engine's runs.
void observe_layer_inputs(Engine& engine, const std::vector<Fp8Layer>& layers, const std::string& graph,
                          std::map<std::string, AbsHistogram>& hist);
// Each histogram's clip by the options' method (else the recipe's).
Fp8Clips clips_of(const std::map<std::string, AbsHistogram>& hist, const QuantRecipe& recipe,
                  const CalibrationOptions& options);

// Turns the layers into FP8 layers: inputs get scale clip / 448; weights (where the layer says
// so) become E4M3 values with per-output-channel scales amax / 448, once per weight however many
// graphs read it; one that a node left in higher precision reads too is an error.
void apply_fp8(ModelDefinition& def, const std::vector<Fp8Layer>& layers, const Fp8Clips& clips);

}  // namespace kiln
