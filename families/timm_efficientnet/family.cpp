// The timm EfficientNet family: builds efficientnet_b0..b4 and tf_efficientnet_b0..b4 from a
// Hugging Face layout checkpoint (timm's state-dict names), folding batch norm into the convs.
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "families/timm_efficientnet/arch.h"
#include "families/timm_efficientnet/build_graph.h"
#include "families/timm_efficientnet/tfjs_import.h"
#include "graph/family_registry.h"
#include "tasks/classification/labels.h"

namespace kiln::timm_efficientnet {

namespace {

// PyTorch OIHW -> kiln OHWI.
Tensor to_ohwi(const Tensor& w) {
  int64_t o = w.dim(0), i = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  Tensor out({o, kh, kw, i});
  for (int64_t a = 0; a < o; ++a)
    for (int64_t b = 0; b < i; ++b)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          out.data[((a * kh + y) * kw + x) * i + b] = w.data[((a * i + b) * kh + y) * kw + x];
  return out;
}

class CheckpointSource : public WeightSource {
 public:
  CheckpointSource(Checkpoint& ckpt, double eps) : ckpt_(ckpt), eps_(eps) {}

  void conv_bn(const std::string& module, const std::string& bn, const std::vector<int64_t>& shape, Tensor& weight,
               Tensor& bias) override {
    const int64_t out = shape[0];
    Tensor w = load(module + ".weight", {shape[0], shape[3], shape[1], shape[2]});
    Tensor gamma = load(bn + ".weight", {out}), beta = load(bn + ".bias", {out});
    Tensor mean = load(bn + ".running_mean", {out}), var = load(bn + ".running_var", {out});
    if (ckpt_.has(bn + ".num_batches_tracked")) ckpt_.ignore(bn + ".num_batches_tracked");
    weight = to_ohwi(w);
    bias = Tensor({out});
    const int64_t per_out = weight.numel() / out;
    for (int64_t o = 0; o < out; ++o) {
      // Folded in double so that the fp32 result is the correctly rounded product.
      double scale = gamma.data[o] / std::sqrt(static_cast<double>(var.data[o]) + eps_);
      for (int64_t k = 0; k < per_out; ++k)
        weight.data[o * per_out + k] = static_cast<float>(weight.data[o * per_out + k] * scale);
      bias.data[o] = static_cast<float>(beta.data[o] - mean.data[o] * scale);
    }
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
  std::string name() const override { return "timm_efficientnet"; }
  std::vector<std::string> architectures() const override { return supported_architectures(); }

  std::vector<std::pair<std::string, std::string>> recipes() const override {
    std::vector<std::pair<std::string, std::string>> all = {
#include "timm_efficientnet_recipes.inc"
    };
    // The seed study's recipe first: it is the default.
    std::stable_partition(all.begin(), all.end(), [](const auto& r) { return r.first == "fp8-pointwise"; });
    return all;
  }

  ModelDefinition build(Checkpoint& ckpt) const override {
    const auto& cfg = ckpt.config();
    std::string arch_name = cfg.value("architecture", std::string());
    auto arch = make_arch(arch_name);
    KILN_CHECK(arch.has_value(), "[timm_efficientnet] unsupported architecture '{}'", arch_name);
    int num_classes = cfg.value("num_classes", 0);
    if (num_classes == 0 && ckpt.has("classifier.weight"))
      num_classes = static_cast<int>(ckpt.shape("classifier.weight")[0]);

    ModelDefinition def;
    def.family = name();
    def.architecture = arch_name;
    def.task = "image_classification";
    CheckpointSource source(ckpt, arch->bn_eps);
    build_graph(*arch, num_classes, source, def);

    auto unused = ckpt.unused();
    KILN_CHECK(unused.empty(),
               "[timm_efficientnet] checkpoint has {} tensor(s) the architecture does not use, e.g. '{}'",
               unused.size(), unused.empty() ? "" : unused.front());

    def.task_config = {{"preprocess", preprocess_config(*arch, cfg.value("pretrained_cfg", nlohmann::json::object()))},
                       {"labels", classification::labels_from_hf_config(cfg, num_classes)}};
    return def;
  }
};

}  // namespace

}  // namespace kiln::timm_efficientnet

namespace kiln {
void register_family_timm_efficientnet(FamilyRegistry& registry) {
  registry.add(std::make_unique<timm_efficientnet::TimmEfficientNet>());
  registry.add(timm_efficientnet::make_tfjs_importer());
}
}  // namespace kiln
