#include "graph/ops/conv2d.h"

#include <algorithm>
#include <cmath>

#include "core/dtype.h"
#include "core/error.h"

namespace kiln {

namespace {

class Conv2dOp : public OpDef {
 public:
  std::string name() const override { return "conv2d"; }
  std::vector<OpInput> inputs() const override {
    return {{"x"}, {"weight"}, {"bias", true}, {"weight_scale", true}, {"gate", true}, {"residual", true}};
  }
  std::vector<AttrSpec> attributes() const override {
    return {optional_attr("stride", AttrType::Ints, std::vector<int64_t>{1, 1}),
            optional_attr("dilation", AttrType::Ints, std::vector<int64_t>{1, 1}),
            optional_attr("groups", AttrType::Int, int64_t{1}),
            optional_attr("pad", AttrType::Ints, std::vector<int64_t>{0, 0, 0, 0}),
            optional_attr("pad_mode", AttrType::String, std::string("explicit")),
            optional_attr("act", AttrType::String, std::string("none")),
            optional_attr("input_layout", AttrType::String, std::string("nhwc")),
            optional_attr("out_dtype", AttrType::String, std::string()),
            optional_attr("input_scale", AttrType::Float, 0.0),
            optional_attr("output_scale", AttrType::Float, 0.0),
            optional_attr("mean_output", AttrType::Int, int64_t{0})};
  }
  int num_outputs(const Node& n) const override { return n.attrs.get_int("mean_output") ? 2 : 1; }

  void check_attrs(const Node& n) const override {
    const auto& stride = n.attrs.get_ints("stride");
    const auto& dilation = n.attrs.get_ints("dilation");
    const auto& pad = n.attrs.get_ints("pad");
    auto bad = [&](const char* what) { fail("[conv2d] {}: bad {}", n.name, what); };
    if (stride.size() != 2 || stride[0] < 1 || stride[1] < 1 || stride[0] > 64 || stride[1] > 64) bad("stride");
    if (dilation.size() != 2 || dilation[0] < 1 || dilation[1] < 1 || dilation[0] > 64 || dilation[1] > 64)
      bad("dilation");
    if (pad.size() != 4 || std::any_of(pad.begin(), pad.end(), [](int64_t p) { return p < 0 || p > 1024; }))
      bad("padding");
    const int64_t groups = n.attrs.get_int("groups");
    if (groups < 1 || groups > (1 << 20)) bad("groups");
    const auto& mode = n.attrs.get_string("pad_mode");
    if (mode != "explicit" && mode != "same") bad("pad_mode (explicit or same)");
    parse_activation(n.attrs.get_string("act"));
    const auto& layout = n.attrs.get_string("input_layout");
    if (layout != "nhwc" && layout != "nchw") bad("input_layout (nhwc or nchw)");
    if (!n.attrs.get_string("out_dtype").empty()) parse_dtype(n.attrs.get_string("out_dtype"));
    for (const char* s : {"input_scale", "output_scale"}) {
      const double v = n.attrs.get_float(s);
      if (!std::isfinite(v) || v < 0) bad(s);
    }
    if (n.attrs.get_int("mean_output") != 0 && n.attrs.get_int("mean_output") != 1) bad("mean_output");
  }

  std::vector<DType> infer_dtypes(const Node& n, const std::vector<std::optional<DType>>& in) const override {
    using namespace conv2d_input;
    const float input_scale = static_cast<float>(n.attrs.get_float("input_scale"));
    require_float(in[X], n, "x");
    require_float(in[Weight], n, "weight");
    auto opt = [&](int slot) { return slot < static_cast<int>(in.size()) ? in[slot] : std::nullopt; };
    for (int slot : {Bias, WeightScale, Gate, Residual})
      if (opt(slot)) require_float(opt(slot), n, inputs()[slot].name.c_str());
    KILN_CHECK(*in[X] != DType::F8E4M3 || input_scale > 0, "[conv2d] {}: an f8e4m3 x needs input_scale", n.name);
    const bool fp8_weight = *in[Weight] == DType::F8E4M3;
    KILN_CHECK(fp8_weight == opt(WeightScale).has_value(), "[conv2d] {}: weight_scale goes with an f8e4m3 weight",
               n.name);
    KILN_CHECK(!fp8_weight || input_scale > 0, "[conv2d] {}: FP8 weights need an FP8 input (input_scale)", n.name);
    const std::string& out = n.attrs.get_string("out_dtype");
    KILN_CHECK(!out.empty() || *in[X] != DType::F8E4M3, "[conv2d] {}: an f8e4m3 x needs out_dtype", n.name);
    const DType y = out.empty() ? *in[X] : parse_dtype(out);
    require_float(y, n, "out_dtype");
    KILN_CHECK(y != DType::F8E4M3 || n.attrs.get_float("output_scale") > 0,
               "[conv2d] {}: an f8e4m3 output needs output_scale", n.name);
    if (n.attrs.get_int("mean_output")) return {y, DType::F32};
    return {y};
  }

  std::vector<Shape> infer_shapes(const Node& n, const std::vector<std::optional<Shape>>& in) const override {
    using namespace conv2d_input;
    require_rank(in[X], 4, n, "x");
    require_rank(in[Weight], 4, n, "weight");
    const Conv2dParams p = conv2d_params(n, *in[Weight]);
    const ConvGeometry g = conv2d_geometry(p, *in[X], *in[Weight], n);
    auto expect = [&](int slot, const Shape& want) {
      if (slot >= static_cast<int>(in.size()) || !in[slot]) return;
      KILN_CHECK(*in[slot] == want, "[conv2d] {}: {} has shape {}, expected {}", n.name, inputs()[slot].name,
                 to_string(*in[slot]), to_string(want));
    };
    expect(Bias, {g.o});
    expect(WeightScale, {g.o});
    expect(Gate, {g.n, 1, 1, g.c});
    expect(Residual, {g.n, g.oh, g.ow, g.o});
    KILN_CHECK(!p.nchw_input || (in.size() <= Gate || !in[Gate]), "[conv2d] {}: a gate needs NHWC input", n.name);
    std::vector<Shape> out = {{g.n, g.oh, g.ow, g.o}};
    if (p.mean_output) out.push_back({g.n, 1, 1, g.o});
    return out;
  }
};

}  // namespace

Conv2dParams conv2d_params(const Node& n, const Shape& w) {
  Conv2dParams p;
  const auto& stride = n.attrs.get_ints("stride");
  const auto& dilation = n.attrs.get_ints("dilation");
  const auto& pad = n.attrs.get_ints("pad");
  KILN_CHECK(w.size() == 4 && w[1] >= 1 && w[2] >= 1 && w[1] <= 64 && w[2] <= 64,
             "[conv2d] {}: weight {} is not [out, kh, kw, in/groups] with kh, kw in 1..64", n.name, to_string(w));
  p.kh = static_cast<int>(w[1]);
  p.kw = static_cast<int>(w[2]);
  p.stride_h = static_cast<int>(stride[0]);
  p.stride_w = static_cast<int>(stride[1]);
  p.dilation_h = static_cast<int>(dilation[0]);
  p.dilation_w = static_cast<int>(dilation[1]);
  p.groups = static_cast<int>(n.attrs.get_int("groups"));
  p.same = n.attrs.get_string("pad_mode") == "same";
  for (int i = 0; i < 4; ++i) p.pad[i] = static_cast<int>(pad[i]);
  p.act = parse_activation(n.attrs.get_string("act"));
  p.nchw_input = n.attrs.get_string("input_layout") == "nchw";
  p.input_scale = static_cast<float>(n.attrs.get_float("input_scale"));
  p.output_scale = static_cast<float>(n.attrs.get_float("output_scale"));
  p.mean_output = n.attrs.get_int("mean_output") != 0;
  return p;
}

ConvGeometry conv2d_geometry(const Conv2dParams& p, const Shape& x, const Shape& w, const Node& n) {
  ConvGeometry g;
  KILN_CHECK(x.size() == 4, "[conv2d] {}: x must have rank 4", n.name);
  for (int64_t d : x) KILN_CHECK(d >= 1 && d <= (1 << 24), "[conv2d] {}: x {} is out of range", n.name, to_string(x));
  g.n = static_cast<int>(x[0]);
  g.h = static_cast<int>(p.nchw_input ? x[2] : x[1]);
  g.w = static_cast<int>(p.nchw_input ? x[3] : x[2]);
  g.c = static_cast<int>(p.nchw_input ? x[1] : x[3]);
  KILN_CHECK(w[0] >= 1 && w[0] <= (1 << 24), "[conv2d] {}: bad output channel count", n.name);
  g.o = static_cast<int>(w[0]);
  KILN_CHECK(g.c % p.groups == 0 && g.o % p.groups == 0 && w[3] == g.c / p.groups,
             "[conv2d] {}: weight {} does not fit {} input channels in {} groups", n.name, to_string(w), g.c, p.groups);
  const int ekh = (p.kh - 1) * p.dilation_h + 1, ekw = (p.kw - 1) * p.dilation_w + 1;
  if (p.same) {
    // TensorFlow "SAME": output = ceil(in / stride); the odd pixel of padding goes at the end.
    auto total = [](int in, int k, int s) { return std::max(((in + s - 1) / s - 1) * s + k - in, 0); };
    const int th = total(g.h, ekh, p.stride_h), tw = total(g.w, ekw, p.stride_w);
    g.pad_top = th / 2;
    g.pad_bottom = th - g.pad_top;
    g.pad_left = tw / 2;
    g.pad_right = tw - g.pad_left;
  } else {
    g.pad_top = p.pad[0];
    g.pad_left = p.pad[1];
    g.pad_bottom = p.pad[2];
    g.pad_right = p.pad[3];
  }
  const int hh = g.h + g.pad_top + g.pad_bottom - ekh, ww = g.w + g.pad_left + g.pad_right - ekw;
  KILN_CHECK(hh >= 0 && ww >= 0, "[conv2d] {}: input {}x{} is too small for the kernel", n.name, g.h, g.w);
  g.oh = hh / p.stride_h + 1;
  g.ow = ww / p.stride_w + 1;
  return g;
}

bool is_pointwise(const Conv2dParams& p) {
  return p.kh == 1 && p.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.groups == 1 && !p.nchw_input &&
         (p.same || (p.pad[0] == 0 && p.pad[1] == 0 && p.pad[2] == 0 && p.pad[3] == 0));
}

bool is_depthwise(const Conv2dParams& p, const Shape& w) { return w[3] == 1 && p.groups == w[0] && p.groups > 1; }

KILN_REGISTER_OPS(conv2d) { registry.add(std::make_unique<Conv2dOp>()); }

}  // namespace kiln
