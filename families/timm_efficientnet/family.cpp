// The timm EfficientNet family: builds efficientnet_b0..b4 and tf_efficientnet_b0..b4 from a
// Hugging Face layout checkpoint (timm's state-dict names), folding batch norm into the convs.
#include "checkpoints/convert.h"
#include "core/error.h"
#include "core/json_int.h"
#include "families/timm_efficientnet/arch.h"
#include "families/timm_efficientnet/build_graph.h"
#include "families/timm_efficientnet/tfjs_import.h"
#include "graph/family_registry.h"
#include "tasks/classification/labels.h"

namespace kiln::timm_efficientnet {

namespace {

class CheckpointSource : public WeightSource {
 public:
  CheckpointSource(Checkpoint& ckpt, double eps) : ckpt_(ckpt), eps_(eps) {}

  void conv_bn(const std::string& module, const std::string& bn, const std::vector<int64_t>& shape, Tensor& weight,
               Tensor& bias) override {
    const int64_t out = shape[0];
    weight = oihw_to_ohwi(load(module + ".weight", {shape[0], shape[3], shape[1], shape[2]}));
    if (ckpt_.has(bn + ".num_batches_tracked")) ckpt_.ignore(bn + ".num_batches_tracked");
    bias = fold_batch_norm(weight, load(bn + ".weight", {out}), load(bn + ".bias", {out}),
                           load(bn + ".running_mean", {out}), load(bn + ".running_var", {out}), eps_);
  }

  void linear(const std::string& module, const std::vector<int64_t>& shape, Tensor& weight, Tensor& bias) override {
    // SE layers are 1x1 convs in timm ([out, in, 1, 1]); the classifier is a Linear ([out, in]).
    auto actual = ckpt_.shape(module + ".weight");
    std::vector<int64_t> expect = actual.size() == 4 ? std::vector<int64_t>{shape[0], shape[1], 1, 1} : shape;
    weight = load(module + ".weight", expect);
    weight.shape = shape;
    bias = load(module + ".bias", {shape[0]});
  }

 private:
  Tensor load(const std::string& name, const std::vector<int64_t>& shape) {
    KILN_CHECK(ckpt_.has(name), "[timm_efficientnet] checkpoint {} is missing tensor '{}'", ckpt_.dir(), name);
    auto actual = ckpt_.shape(name);
    KILN_CHECK(actual == shape, "[timm_efficientnet] tensor '{}' has shape {}, the architecture needs {}", name,
               shape_string(actual), shape_string(shape));
    return ckpt_.load(name);
  }

  Checkpoint& ckpt_;
  double eps_;
};

class TimmEfficientNet : public Family {
 public:
  std::vector<std::unique_ptr<Importer>> make_importers() const override {
    std::vector<std::unique_ptr<Importer>> out;
    out.push_back(make_tfjs_importer());
    return out;
  }

  ModelDefinition build(Checkpoint& ckpt) const override {
    const auto& cfg = ckpt.config();
    std::string arch_name = cfg.value("architecture", std::string());
    auto arch = make_arch(arch_name);
    KILN_CHECK(arch.has_value(), "[timm_efficientnet] unsupported architecture '{}'", arch_name);
    int num_classes =
        cfg.contains("num_classes")
            ? static_cast<int>(json_int(cfg["num_classes"], 0, 1 << 20, "[timm_efficientnet] num_classes"))
            : 0;
    if (num_classes == 0 && ckpt.has("classifier.weight"))
      num_classes = static_cast<int>(ckpt.shape("classifier.weight")[0]);

    ModelDefinition def;
    def.family = name();
    def.architecture = arch_name;
    def.task = "image_classification";
    const nlohmann::json pre = preprocess_config(*arch, cfg.value("pretrained_cfg", nlohmann::json::object()));
    CheckpointSource source(ckpt, arch->bn_eps);
    build_graph(*arch, num_classes, pre["input_size"][1].get<int>(), pre["input_size"][2].get<int>(), source, def);

    auto unused = ckpt.unused();
    KILN_CHECK(unused.empty(),
               "[timm_efficientnet] checkpoint has {} tensor(s) the architecture does not use, e.g. '{}'",
               unused.size(), unused.empty() ? "" : unused.front());

    def.task_config = {
        {"graph", "main"}, {"preprocess", pre}, {"labels", classification::labels_from_hf_config(cfg, num_classes)}};
    return def;
  }
};

}  // namespace

}  // namespace kiln::timm_efficientnet

namespace kiln {
KILN_FAMILY(timm_efficientnet) { return std::make_unique<timm_efficientnet::TimmEfficientNet>(); }
}  // namespace kiln
