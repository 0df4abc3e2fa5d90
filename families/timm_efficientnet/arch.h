// timm's EfficientNet B0-B4 (and the tf_ ports) as data: the same block strings, channel and
// depth scaling rules (round_channels, ceil depth) that timm's _gen_efficientnet uses.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kiln::timm_efficientnet {

struct BlockSpec {
  bool inverted_residual = true;  // false: timm's DepthwiseSeparableConv ("ds")
  int kernel = 3, stride = 1;
  int in_ch = 0, mid_ch = 0, out_ch = 0, se_ch = 0;
  bool skip = false;
  std::string prefix;  // "blocks.<stage>.<index>"
};

struct ArchSpec {
  std::string name;
  bool tf_same_padding = false;  // tf_ variants: TensorFlow "same" padding
  double bn_eps = 1e-5;          // tf_ variants: 1e-3
  int stem_ch = 32;
  int num_features = 1280;
  std::vector<std::vector<BlockSpec>> stages;
  // timm's default pretrained_cfg for this architecture (used when config.json has none).
  int input_size = 224;
  double crop_pct = 0.875;
};

std::vector<std::string> supported_architectures();
std::optional<ArchSpec> make_arch(const std::string& name);

}  // namespace kiln::timm_efficientnet
