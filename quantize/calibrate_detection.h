// FP8 calibration of an object detector over images. The model is written to a temporary fp32
// bundle and detects on the CPU reference kernels, each image letterboxed as `kiln detect` does
// it (the predictor's letterbox, not a square), while every selected layer's input is observed.
#pragma once

#include <vector>

#include "quantize/calibrate.h"

namespace kiln {

// options.data: a YOLO-format folder (its images/; labels/ is not read); the first
// options.samples images in name order are used.
Fp8Clips calibrate_detection_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                                         const QuantRecipe& recipe, const CalibrationOptions& options);

}  // namespace kiln
