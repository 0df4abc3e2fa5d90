#include "tasks/classification/preprocess.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/json_int.h"

namespace kiln::classification {

PreprocessConfig PreprocessConfig::from_json(const nlohmann::json& j) {
  PreprocessConfig c;
  try {
    const auto size = json_ints(j.at("input_size"), 3, 0, 4096, "[preprocess] input_size");
    KILN_CHECK(size.size() == 3 && size[0] == 3 && size[1] > 0 && size[2] > 0 && size[1] <= 4096 && size[2] <= 4096,
               "[preprocess] input_size must be [3, H, W]");
    c.channels = static_cast<int>(size[0]);
    c.height = static_cast<int>(size[1]);
    c.width = static_cast<int>(size[2]);
    c.filter = parse_resample_filter(j.value("interpolation", std::string("bicubic")));
    c.crop_pct = j.value("crop_pct", 0.875);
    KILN_CHECK(c.crop_pct > 0.05 && c.crop_pct <= 4.0, "[preprocess] crop_pct {} is out of range", c.crop_pct);
    c.crop_mode = j.value("crop_mode", std::string("center"));
    KILN_CHECK(c.crop_mode == "center" || c.crop_mode == "squash", "[preprocess] unsupported crop_mode '{}'",
               c.crop_mode);
    auto mean = j.at("mean").get<std::vector<double>>();
    auto std = j.at("std").get<std::vector<double>>();
    KILN_CHECK(mean.size() == 3 && std.size() == 3, "[preprocess] mean and std need 3 values");
    for (int i = 0; i < 3; ++i) {
      KILN_CHECK(std[i] > 0, "[preprocess] std must be positive");
      c.mean[i] = static_cast<float>(mean[i]);
      c.std[i] = static_cast<float>(std[i]);
    }
  } catch (const nlohmann::json::exception& e) {
    fail("[preprocess] malformed configuration: {}", e.what());
  }
  return c;
}

void preprocess(const Image& image, const PreprocessConfig& cfg, float* out) {
  // timm: scale_size = floor(img_size / crop_pct) per side.
  int scale_h = static_cast<int>(std::floor(cfg.height / cfg.crop_pct));
  int scale_w = static_cast<int>(std::floor(cfg.width / cfg.crop_pct));
  int new_w, new_h;
  if (cfg.crop_mode == "squash" || scale_h != scale_w) {
    new_w = scale_w;
    new_h = scale_h;
  } else {
    // torchvision Resize(int): the shorter side becomes scale, the longer int(scale * long / short).
    int shorter = std::min(image.width, image.height), longer = std::max(image.width, image.height);
    int new_long = static_cast<int>(static_cast<double>(static_cast<int64_t>(scale_h) * longer) / shorter);
    new_w = image.width <= image.height ? scale_h : new_long;
    new_h = image.width <= image.height ? new_long : scale_h;
  }
  KILN_CHECK(new_w >= cfg.width && new_h >= cfg.height, "[preprocess] image is smaller than the crop");
  // torchvision center_crop: int(round((size - crop) / 2.0)), Python rounding (half to even).
  // Only the crop is resized: the same pixels, without the ones the crop drops.
  const ImageWindow window{static_cast<int>(std::nearbyint((new_w - cfg.width) / 2.0)),
                           static_cast<int>(std::nearbyint((new_h - cfg.height) / 2.0)), cfg.width, cfg.height};
  const Image cropped = resize_pil(image, new_w, new_h, cfg.filter, window);
  const size_t plane = static_cast<size_t>(cfg.height) * cfg.width;
  for (size_t i = 0; i < plane; ++i) {
    const uint8_t* px = cropped.rgb.data() + i * 3;
    for (int c = 0; c < 3; ++c) {
      float v = static_cast<float>(px[c]) / 255.0f;  // ToTensor, then Normalize, in fp32 as PyTorch does
      out[c * plane + i] = (v - cfg.mean[c]) / cfg.std[c];
    }
  }
}

}  // namespace kiln::classification
