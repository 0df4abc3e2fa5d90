#include "families/timm_efficientnet/build_graph.h"

#include "core/error.h"
#include "core/json_int.h"
#include "graph/builder.h"

namespace kiln::timm_efficientnet {

namespace {

class Builder {
 public:
  Builder(const ArchSpec& arch, WeightSource& source, ModelDefinition& def) : arch_(arch), source_(source), b_(def) {}

  // A conv + folded batch norm from `in_ch` to `out_ch` channels.
  int conv(int x, int in_ch, const std::string& module, const std::string& bn, int out_ch, int kernel, int stride,
           bool depthwise, Activation act, const std::string& group) {
    Tensor w, b;
    source_.conv_bn(module, bn, {out_ch, kernel, kernel, depthwise ? 1 : in_ch}, w, b);
    ConvOptions o;
    o.stride = stride;
    o.groups = depthwise ? in_ch : 1;
    o.same = arch_.tf_same_padding;
    o.pad = ((stride - 1) + (kernel - 1)) / 2;  // timm get_padding(): symmetric
    o.act = act;
    o.group = group;
    return b_.conv2d(x, module, std::move(w), std::move(b), o);
  }

  int squeeze_excite(int x, const BlockSpec& b, int c) {
    Tensor rw, rb, ew, eb;
    source_.linear(b.prefix + ".se.conv_reduce", {b.se_ch, c}, rw, rb);
    source_.linear(b.prefix + ".se.conv_expand", {c, b.se_ch}, ew, eb);
    return b_.squeeze_excite(x, b.prefix + ".se", std::move(rw), std::move(rb), std::move(ew), std::move(eb),
                             Activation::SiLU, "squeeze_excite");
  }

  int block(int x, const BlockSpec& b) {
    int y = x;
    if (b.inverted_residual) {
      y = conv(y, b.in_ch, b.prefix + ".conv_pw", b.prefix + ".bn1", b.mid_ch, 1, 1, false, Activation::SiLU,
               "pointwise_expand");
      y = conv(y, b.mid_ch, b.prefix + ".conv_dw", b.prefix + ".bn2", b.mid_ch, b.kernel, b.stride, true,
               Activation::SiLU, "depthwise");
      y = squeeze_excite(y, b, b.mid_ch);
      y = conv(y, b.mid_ch, b.prefix + ".conv_pwl", b.prefix + ".bn3", b.out_ch, 1, 1, false, Activation::None,
               "pointwise_project");
    } else {
      y = conv(y, b.in_ch, b.prefix + ".conv_dw", b.prefix + ".bn1", b.in_ch, b.kernel, b.stride, true,
               Activation::SiLU, "depthwise");
      y = squeeze_excite(y, b, b.in_ch);
      y = conv(y, b.in_ch, b.prefix + ".conv_pw", b.prefix + ".bn2", b.out_ch, 1, 1, false, Activation::None,
               "pointwise_project");
    }
    if (b.skip) y = b_.op("add", b.prefix + ".skip", {y, x}, {}, "pointwise_project");
    return y;
  }

  void build(int num_classes, int height, int width) {
    b_.graph().set_symbol("batch", {1, 4096});
    int x = b_.input("pixels", DType::F32, {{0, "batch"}, {3, ""}, {height, ""}, {width, ""}});
    x = b_.op("transpose", "pixels_nhwc", {x}, {{"perm", std::vector<int64_t>{0, 2, 3, 1}}}, "stem");
    x = conv(x, 3, "conv_stem", "bn1", arch_.stem_ch, 3, 2, false, Activation::SiLU, "stem");
    b_.name_value(x, "stem_out");
    for (size_t s = 0; s < arch_.stages.size(); ++s) {
      for (const auto& blk : arch_.stages[s]) x = block(x, blk);
      b_.name_value(x, "blocks." + std::to_string(s));
    }
    x = conv(x, arch_.stages.back().back().out_ch, "conv_head", "bn2", arch_.num_features, 1, 1, false,
             Activation::SiLU, "head");
    b_.name_value(x, "head_out");
    x = b_.global_avg_pool(x, "global_pool", "head");
    x = b_.op("reshape", "flatten", {x}, {{"shape", std::vector<int64_t>{0, -1}}}, "head");
    Tensor w, b;
    source_.linear("classifier", {num_classes, arch_.num_features}, w, b);
    x = b_.linear(x, "classifier", std::move(w), std::move(b), Activation::None, "head");
    b_.output("logits", x);
  }

 private:
  const ArchSpec& arch_;
  WeightSource& source_;
  GraphBuilder b_;
};

}  // namespace

void build_graph(const ArchSpec& arch, int num_classes, int height, int width, WeightSource& source,
                 ModelDefinition& def) {
  KILN_CHECK(num_classes > 0 && num_classes <= 1000000, "[timm_efficientnet] bad num_classes {}", num_classes);
  KILN_CHECK(height >= 32 && width >= 32 && height <= 4096 && width <= 4096, "[timm_efficientnet] bad input size {}x{}",
             height, width);
  Builder(arch, source, def).build(num_classes, height, width);
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
  // The graph is built for this size, so it is checked here, not only when a bundle is read.
  const auto size = json_ints(p["input_size"], 3, 1, 4096, "[timm_efficientnet] pretrained_cfg.input_size");
  KILN_CHECK(size.size() == 3 && size[0] == 3,
             "[timm_efficientnet] pretrained_cfg.input_size must be [3, H, W], not {}", p["input_size"].dump());
  return p;
}

}  // namespace kiln::timm_efficientnet
