// Builds kiln's graph for an EfficientNet from an ArchSpec, pulling each layer's (already
// BN-folded) weights from a WeightSource: the safetensors checkpoint or the TF.js import.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "families/timm_efficientnet/arch.h"
#include "graph/model_definition.h"

namespace kiln::timm_efficientnet {

class WeightSource {
 public:
  virtual ~WeightSource() = default;
  // A convolution followed by batch norm, folded: weight OHWI of `shape`, bias [out].
  // `module` and `bn` are timm module paths ("blocks.1.0.conv_pw", "blocks.1.0.bn1").
  virtual void conv_bn(const std::string& module, const std::string& bn, const std::vector<int64_t>& shape,
                       Tensor& weight, Tensor& bias) = 0;
  // A layer with its own bias (SE 1x1 convs, the classifier): weight [out, in], bias [out].
  virtual void linear(const std::string& module, const std::vector<int64_t>& shape, Tensor& weight, Tensor& bias) = 0;
};

// Fills the "main" graph and the weights of `def`: input "pixels" [batch, 3, height, width]
// (NCHW, normalised), output "logits" [batch, num_classes]; stage outputs are named taps
// ("stem_out", "blocks.0" ... "blocks.6", "head_out", NHWC) for comparing with timm.
void build_graph(const ArchSpec& arch, int num_classes, int height, int width, WeightSource& source,
                 ModelDefinition& def);

// timm's eval preprocessing (pretrained_cfg keys) for `arch`, overridden by `cfg` where given.
nlohmann::json preprocess_config(const ArchSpec& arch, const nlohmann::json& cfg);

}  // namespace kiln::timm_efficientnet
