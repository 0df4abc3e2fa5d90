// FP8 calibration of an encoder-decoder (translation, summarization) over text. The model is
// written to a temporary fp32 bundle and generates (greedy) for the calibration sentences on the
// CPU reference kernels while every selected layer's input is observed, so that the decoder's
// layers see the activations of real decoding steps, as they will when the bundle runs.
#pragma once

#include <vector>

#include "quantize/calibrate.h"

namespace kiln {

// options.data: a text file, one source sentence a line; the first options.samples non-empty
// lines are used.
Fp8Clips calibrate_text_activations(const ModelDefinition& def, const std::vector<Fp8Layer>& layers,
                                    const QuantRecipe& recipe, const CalibrationOptions& options);

}  // namespace kiln
