#include "families/timm_efficientnet/build_graph.h"

#include "core/error.h"

namespace kiln::timm_efficientnet {

namespace {

class Builder {
 public:
  Builder(const ArchSpec& arch, WeightSource& source, ModelDefinition& def)
      : arch_(arch), source_(source), def_(def), g_(def.graph) {}

  int conv(int x, const std::string& module, const std::string& bn, int out_ch, int kernel, int stride, bool depthwise,
           Activation act, const std::string& group) {
    int in_ch = g_.values()[x].channels;
    Node n;
    n.name = module;
    n.op = Op::Conv2d;
    n.kernel = kernel;
    n.stride = stride;
    n.groups = depthwise ? in_ch : 1;
    if (arch_.tf_same_padding) {
      n.pad.same = true;
    } else {  // timm get_padding(): symmetric ((stride - 1) + (kernel - 1)) // 2
      int p = ((stride - 1) + (kernel - 1)) / 2;
      n.pad = {false, p, p, p, p};
    }
    n.act = act;
    n.group = group;
    n.weight = module + ".weight";
    n.bias = module + ".bias";
    Tensor w, b;
    source_.conv_bn(module, bn, {out_ch, kernel, kernel, depthwise ? 1 : in_ch}, w, b);
    def_.weights[n.weight] = std::move(w);
    def_.weights[n.bias] = std::move(b);
    n.inputs = {x};
    n.output = g_.add_value(out_ch);
    g_.add_node(n);
    return n.output;
  }

  int linear(int x, const std::string& module, int out_ch, Activation act, const std::string& group) {
    int in_ch = g_.values()[x].channels;
    Node n;
    n.name = module;
    n.op = Op::Linear;
    n.act = act;
    n.group = group;
    n.weight = module + ".weight";
    n.bias = module + ".bias";
    Tensor w, b;
    source_.linear(module, {out_ch, in_ch}, w, b);
    def_.weights[n.weight] = std::move(w);
    def_.weights[n.bias] = std::move(b);
    n.inputs = {x};
    n.output = g_.add_value(out_ch);
    g_.add_node(n);
    return n.output;
  }

  int simple(Op op, const std::string& name, std::vector<int> inputs, const std::string& group) {
    Node n;
    n.name = name;
    n.op = op;
    n.group = group;
    n.inputs = std::move(inputs);
    n.output = g_.add_value(g_.values()[n.inputs[0]].channels);
    g_.add_node(n);
    return n.output;
  }

  int squeeze_excite(int x, const BlockSpec& b) {
    int c = g_.values()[x].channels;
    int pooled = simple(Op::GlobalAvgPool, b.prefix + ".se.pool", {x}, "squeeze_excite");
    int r = linear(pooled, b.prefix + ".se.conv_reduce", b.se_ch, Activation::SiLU, "squeeze_excite");
    int gate = linear(r, b.prefix + ".se.conv_expand", c, Activation::Sigmoid, "squeeze_excite");
    return simple(Op::ScaleChannels, b.prefix + ".se.gate", {x, gate}, "squeeze_excite");
  }

  int block(int x, const BlockSpec& b) {
    int y = x;
    if (b.inverted_residual) {
      y = conv(y, b.prefix + ".conv_pw", b.prefix + ".bn1", b.mid_ch, 1, 1, false, Activation::SiLU,
               "pointwise_expand");
      y = conv(y, b.prefix + ".conv_dw", b.prefix + ".bn2", b.mid_ch, b.kernel, b.stride, true, Activation::SiLU,
               "depthwise");
      y = squeeze_excite(y, b);
      y = conv(y, b.prefix + ".conv_pwl", b.prefix + ".bn3", b.out_ch, 1, 1, false, Activation::None,
               "pointwise_project");
    } else {
      y = conv(y, b.prefix + ".conv_dw", b.prefix + ".bn1", b.in_ch, b.kernel, b.stride, true, Activation::SiLU,
               "depthwise");
      y = squeeze_excite(y, b);
      y = conv(y, b.prefix + ".conv_pw", b.prefix + ".bn2", b.out_ch, 1, 1, false, Activation::None,
               "pointwise_project");
    }
    if (b.skip) y = simple(Op::Add, b.prefix + ".skip", {y, x}, "pointwise_project");
    return y;
  }

  void build(int num_classes) {
    int x = g_.add_value(3, "input");
    g_.set_input(x);
    x = conv(x, "conv_stem", "bn1", arch_.stem_ch, 3, 2, false, Activation::SiLU, "stem");
    name_value(x, "stem_out");
    for (size_t s = 0; s < arch_.stages.size(); ++s) {
      for (const auto& b : arch_.stages[s]) x = block(x, b);
      name_value(x, "blocks." + std::to_string(s));
    }
    x = conv(x, "conv_head", "bn2", arch_.num_features, 1, 1, false, Activation::SiLU, "head");
    name_value(x, "head_out");
    x = simple(Op::GlobalAvgPool, "global_pool", {x}, "head");
    x = linear(x, "classifier", num_classes, Activation::None, "head");
    name_value(x, "logits");
    g_.set_output(x);
  }

 private:
  // Named values are taps that tests compare with timm's intermediate outputs.
  void name_value(int v, const std::string& name) { g_.set_value_name(v, name); }

  const ArchSpec& arch_;
  WeightSource& source_;
  ModelDefinition& def_;
  Graph& g_;
};

}  // namespace

void build_graph(const ArchSpec& arch, int num_classes, WeightSource& source, ModelDefinition& def) {
  KILN_CHECK(num_classes > 0 && num_classes <= 1000000, "[timm_efficientnet] bad num_classes {}", num_classes);
  Builder(arch, source, def).build(num_classes);
  def.validate();
}

nlohmann::json preprocess_config(const ArchSpec& arch, const nlohmann::json& cfg) {
  nlohmann::json p = {
      {"input_size", {3, arch.input_size, arch.input_size}},
      {"interpolation", "bicubic"},
      {"crop_pct", arch.crop_pct},
      {"crop_mode", "center"},
      {"mean", {0.485, 0.456, 0.406}},
      {"std", {0.229, 0.224, 0.225}},
  };
  if (cfg.is_object())
    for (const char* key : {"input_size", "interpolation", "crop_pct", "crop_mode", "mean", "std"})
      if (cfg.contains(key) && !cfg[key].is_null()) p[key] = cfg[key];
  return p;
}

}  // namespace kiln::timm_efficientnet
