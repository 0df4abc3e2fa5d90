#include "families/timm_efficientnet/tfjs_import.h"

#include <cmath>
#include <regex>
#include <set>

#include "checkpoints/checkpoint.h"
#include "checkpoints/convert.h"
#include "checkpoints/tfjs_model.h"
#include "core/error.h"
#include "families/timm_efficientnet/arch.h"
#include "families/timm_efficientnet/build_graph.h"
#include "tasks/classification/labels.h"

namespace kiln::timm_efficientnet {

namespace {

const std::string kPrefix = "StatefulPartitionedCall/model/";

// Keras layer names of the TF-Hub EfficientNet, per timm module.
std::string block_path(const std::string& module) {
  static const std::regex re(R"(blocks\.(\d+)\.(\d+)\..*)");
  std::smatch m;
  if (!std::regex_match(module, m, re)) return {};
  return kPrefix + "stack_" + m[1].str() + "/block_" + m[2].str() + "/";
}

void expect_shape(const Tensor& t, const std::vector<int64_t>& shape, const std::string& what) {
  KILN_CHECK(t.shape == shape, "[tfjs_import] {} has shape {}, the architecture needs {}", what, shape_string(t.shape),
             shape_string(shape));
}

class TfjsSource : public WeightSource {
 public:
  explicit TfjsSource(const TfjsModel& m) : m_(m) {}

  void conv_bn(const std::string& module, const std::string&, const std::vector<int64_t>& shape, Tensor& weight,
               Tensor& bias) override {
    std::string base = conv_base(module);
    bool depthwise = module.ends_with("conv_dw");
    const Tensor& w = m_.weight(base + (depthwise ? "depthwise_weights" : "Conv2D_weights"));
    weight = depthwise ? depthwise_hwc1_to_ohwi(w) : hwio_to_ohwi(w);
    expect_shape(weight, shape, module);
    bias = m_.weight(base + (depthwise ? "depthwise_bn_offset" : "Conv2D_bn_offset"));
    expect_shape(bias, {shape[0]}, module + " offset");
  }

  void linear(const std::string& module, const std::vector<int64_t>& shape, Tensor& weight, Tensor& bias) override {
    std::string node;
    if (module == "classifier") {
      node = kPrefix + "logits/BiasAdd";
    } else {
      node = block_path(module) +
             (module.ends_with("conv_reduce") ? "se_reduce_conv2d/BiasAdd" : "se_expand_conv2d/BiasAdd");
    }
    const auto& n = m_.node(node);
    KILN_CHECK(n.inputs.size() == 3, "[tfjs_import] node {} does not carry weight and bias", node);
    Tensor w = m_.weight(n.inputs[1]);
    if (w.shape.size() == 4) w.shape = {w.dim(2), w.dim(3)};  // [1, 1, in, out] -> [in, out]
    expect_shape(w, {shape[1], shape[0]}, module);
    weight = transpose_2d(w);
    bias = m_.weight(n.inputs[2]);
    expect_shape(bias, {shape[0]}, module + " bias");
  }

 private:
  std::string conv_base(const std::string& module) const {
    if (module == "conv_stem") return kPrefix + "stem_conv2d/";
    if (module == "conv_head") return kPrefix + "top_conv2d/";
    std::string block = block_path(module);
    KILN_CHECK(!block.empty(), "[tfjs_import] no TF.js layer for {}", module);
    if (module.ends_with("conv_dw")) return block + "depthwise_conv2d/";
    if (module.ends_with("conv_pwl")) return block + "project_conv2d/";
    // conv_pw is the expansion in inverted-residual blocks and the projection in the first (ds) block.
    bool has_expand = m_.has_weight(block + "expand_conv2d/Conv2D_weights");
    return block + (has_expand ? "expand_conv2d/" : "project_conv2d/");
  }

  const TfjsModel& m_;
};

// Which tf_efficientnet_bN has this many blocks per stack and this stem width.
ArchSpec match_architecture(const TfjsModel& m) {
  static const std::regex re(
      R"(StatefulPartitionedCall/model/stack_(\d+)/block_(\d+)/depthwise_conv2d/depthwise_weights)");
  std::map<int, int> blocks;
  for (const auto& [name, node] : m.nodes()) {
    std::smatch s;
    if (std::regex_match(name, s, re)) blocks[std::stoi(s[1])] = std::max(blocks[std::stoi(s[1])], std::stoi(s[2]) + 1);
  }
  KILN_CHECK(m.has_weight(kPrefix + "stem_conv2d/Conv2D_weights"), "[tfjs_import] {} is not an EfficientNet graph",
             m.dir());
  int stem = static_cast<int>(m.weight(kPrefix + "stem_conv2d/Conv2D_weights").dim(3));
  for (const auto& name : supported_architectures()) {
    if (!name.starts_with("tf_")) continue;
    ArchSpec a = *make_arch(name);
    bool same = a.stem_ch == stem && a.stages.size() == blocks.size();
    for (size_t s = 0; same && s < a.stages.size(); ++s)
      same = blocks.count(static_cast<int>(s)) && blocks[static_cast<int>(s)] == static_cast<int>(a.stages[s].size());
    if (same) return a;
  }
  fail("[tfjs_import] {}: no tf_efficientnet_b0..b4 has {} stacks with stem width {}", m.dir(), blocks.size(), stem);
}

// The depthwise convs carry the strides and all convs TF "SAME" padding; check them against the arch.
void check_structure(const TfjsModel& m, const ArchSpec& a) {
  for (const auto& stage : a.stages)
    for (const auto& b : stage) {
      const auto& n = m.node(block_path(b.prefix + ".x") + "depthwise_conv2d/depthwise");
      auto strides = n.attr.value("strides", nlohmann::json::object())
                         .value("list", nlohmann::json::object())
                         .value("i", nlohmann::json::array());
      std::string pad = n.attr.value("padding", nlohmann::json::object()).value("s", std::string());
      KILN_CHECK(strides.size() == 4 && strides[1] == std::to_string(b.stride) && pad == "U0FNRQ==" /* base64 SAME */,
                 "[tfjs_import] {}: depthwise conv of {} does not have stride {} and SAME padding", m.dir(), b.prefix,
                 b.stride);
    }
}

// The graph normalises inside: (x * scale - mean * scale) / (std * scale). Recover mean and std;
// the constants are float32 products, so round to 6 decimals to get the published values back.
nlohmann::json normalisation(const TfjsModel& m) {
  const Tensor& scale = m.weight(kPrefix + "tf_op_layer_Mul/Mul/y");
  const Tensor& mean = m.weight(kPrefix + "tf_op_layer_BroadcastTo/BroadcastTo/input");
  const Tensor& std = m.weight(kPrefix + "tf_op_layer_BroadcastTo_1/BroadcastTo_1/input");
  KILN_CHECK(scale.numel() == 1 && mean.numel() == 3 && std.numel() == 3 && scale.data[0] != 0.0f,
             "[tfjs_import] unexpected input normalisation constants");
  nlohmann::json j = {{"mean", nlohmann::json::array()}, {"std", nlohmann::json::array()}};
  for (int c = 0; c < 3; ++c) {
    j["mean"].push_back(std::round(1e6 * mean.data[c] / scale.data[0]) / 1e6);
    j["std"].push_back(std::round(1e6 * std.data[c] / scale.data[0]) / 1e6);
  }
  return j;
}

class TfjsImporter : public Importer {
 public:
  std::string name() const override { return "tfjs_efficientnet"; }

  bool recognizes(const std::string& path) const override {
    // Only model.json is read here; the shards are read by import().
    if (!TfjsModel::looks_like(path)) return false;
    auto j = read_json_file(path + "/model.json", "tfjs");
    for (const auto& group : j.value("weightsManifest", nlohmann::json::array()))
      for (const auto& w : group.value("weights", nlohmann::json::array()))
        if (w.value("name", std::string()) == kPrefix + "stem_conv2d/Conv2D_weights") return true;
    return false;
  }

  ModelDefinition import(const std::string& path) const override {
    TfjsModel m(path);
    ArchSpec arch = match_architecture(m);
    check_structure(m, arch);
    ModelDefinition def;
    def.family = "timm_efficientnet";
    def.architecture = arch.name;
    def.task = "image_classification";
    TfjsSource source(m);
    const Tensor& logits_w = m.weight(m.node(kPrefix + "logits/BiasAdd").inputs.at(1));
    int num_classes = static_cast<int>(logits_w.dim(1));
    const nlohmann::json pre = preprocess_config(arch, normalisation(m));
    build_graph(arch, num_classes, pre["input_size"][1].get<int>(), pre["input_size"][2].get<int>(), source, def);
    def.task_config = {{"graph", "main"},
                       {"preprocess", pre},
                       {"labels", classification::labels_from_hf_config(nlohmann::json::object(), num_classes)}};
    def.source = {{"format", "tfjs-graph-model"}, {"files", m.files()}};
    return def;
  }
};

}  // namespace

std::unique_ptr<Importer> make_tfjs_importer() { return std::make_unique<TfjsImporter>(); }

}  // namespace kiln::timm_efficientnet
