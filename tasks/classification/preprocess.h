// timm's eval transform (resize shorter side to floor(size / crop_pct) with Pillow, center crop,
// to float /255, normalise), configured from a pretrained_cfg-style JSON object.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <string>

#include "tasks/image/image.h"
#include "tasks/image/resize_pil.h"

namespace kiln::classification {

struct PreprocessConfig {
  int channels = 3, height = 224, width = 224;
  ResampleFilter filter = ResampleFilter::Bicubic;
  double crop_pct = 0.875;
  std::string crop_mode = "center";  // "center" or "squash"
  std::array<float, 3> mean{}, std{};

  static PreprocessConfig from_json(const nlohmann::json& j);
};

// Writes channels x height x width floats (CHW) to `out`.
void preprocess(const Image& image, const PreprocessConfig& cfg, float* out);

}  // namespace kiln::classification
