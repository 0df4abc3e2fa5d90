// What every public model class reports about its bundle (kiln::ModelInfo), read from the bundle's
// manifest once; each class adds its task's own fields (input size, classes).
#pragma once

#include <string>

#include "bundle/bundle.h"
#include "kiln/kiln.h"

namespace kiln {

// device: where the bundle's engine runs ("cpu", "cuda:0 (NVIDIA H200)").
ModelInfo bundle_model_info(const Bundle& bundle, const std::string& device);

}  // namespace kiln
