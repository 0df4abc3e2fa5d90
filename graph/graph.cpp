#include "graph/graph.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/tensor.h"

namespace kiln {

namespace {

constexpr std::pair<Op, const char*> kOps[] = {{Op::Conv2d, "conv2d"},
                                               {Op::GlobalAvgPool, "global_avg_pool"},
                                               {Op::Linear, "linear"},
                                               {Op::ScaleChannels, "scale_channels"},
                                               {Op::Add, "add"}};
constexpr std::pair<Activation, const char*> kActs[] = {
    {Activation::None, "none"}, {Activation::SiLU, "silu"}, {Activation::Sigmoid, "sigmoid"}};

template <typename E, size_t N>
E parse_enum(const std::pair<E, const char*> (&table)[N], const std::string& s, const char* what) {
  for (const auto& [e, name] : table)
    if (s == name) return e;
  fail("[graph] unknown {} '{}'", what, s);
}

int out_size(int in, int k, int stride, int pad_lo, int pad_hi) { return (in + pad_lo + pad_hi - k) / stride + 1; }

}  // namespace

const char* op_name(Op op) {
  for (const auto& [e, name] : kOps)
    if (e == op) return name;
  return "?";
}

const char* activation_name(Activation act) {
  for (const auto& [e, name] : kActs)
    if (e == act) return name;
  return "?";
}

int Graph::add_value(int channels, std::string name) {
  values_.push_back({channels, std::move(name)});
  return static_cast<int>(values_.size()) - 1;
}

void Graph::add_node(Node node) { nodes_.push_back(std::move(node)); }

void Graph::replace_node(int index, Node node) {
  Node& old = nodes_.at(index);
  KILN_CHECK(old.inputs == node.inputs && old.output == node.output, "[graph] {}: a rewrite may not rewire", old.name);
  old = std::move(node);
}

std::optional<int> Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values_.size(); ++i)
    if (!name.empty() && values_[i].name == name) return static_cast<int>(i);
  return std::nullopt;
}

Padding Graph::resolve_padding(const Node& n, int in_h, int in_w) {
  if (!n.pad.same) return n.pad;
  // TensorFlow "SAME": output = ceil(in / stride); the odd pixel of padding goes at the end.
  auto total = [&](int in) {
    int out = (in + n.stride - 1) / n.stride;
    return std::max((out - 1) * n.stride + n.kernel - in, 0);
  };
  Padding p;
  int th = total(in_h), tw = total(in_w);
  p.top = th / 2;
  p.bottom = th - p.top;
  p.left = tw / 2;
  p.right = tw - p.left;
  return p;
}

std::vector<Dims> Graph::infer_dims(int height, int width) const {
  KILN_CHECK(height > 0 && width > 0 && height <= 16384 && width <= 16384, "[graph] input size {}x{} is out of range",
             height, width);
  std::vector<Dims> dims(values_.size());
  dims[input_] = {values_[input_].channels, height, width};
  for (const auto& n : nodes_) {
    const Dims& x = dims[n.inputs[0]];
    Dims& y = dims[n.output];
    y.c = values_[n.output].channels;
    switch (n.op) {
      case Op::Conv2d: {
        Padding p = resolve_padding(n, x.h, x.w);
        y.h = out_size(x.h, n.kernel, n.stride, p.top, p.bottom);
        y.w = out_size(x.w, n.kernel, n.stride, p.left, p.right);
        KILN_CHECK(y.h > 0 && y.w > 0, "[graph] {}: input {}x{} is too small", n.name, x.h, x.w);
        break;
      }
      case Op::Linear:
        KILN_CHECK(x.h == 1 && x.w == 1, "[graph] {}: linear needs a 1x1 input", n.name);
        y.h = y.w = 1;
        break;
      case Op::GlobalAvgPool:
        y.h = y.w = 1;
        break;
      case Op::ScaleChannels: {
        const Dims& gate = dims[n.inputs[1]];
        KILN_CHECK(gate.h == 1 && gate.w == 1, "[graph] {}: the gate must be 1x1", n.name);
        y.h = x.h;
        y.w = x.w;
        break;
      }
      case Op::Add: {
        const Dims& b = dims[n.inputs[1]];
        KILN_CHECK(b.h == x.h && b.w == x.w, "[graph] {}: operands differ in size", n.name);
        y.h = x.h;
        y.w = x.w;
        break;
      }
    }
  }
  return dims;
}

nlohmann::json Graph::to_json() const {
  nlohmann::json j;
  j["input"] = input_;
  j["output"] = output_;
  auto& vals = j["values"] = nlohmann::json::array();
  for (const auto& v : values_) {
    nlohmann::json jv = {{"channels", v.channels}};
    if (!v.name.empty()) jv["name"] = v.name;
    vals.push_back(jv);
  }
  auto& nodes = j["nodes"] = nlohmann::json::array();
  for (const auto& n : nodes_) {
    nlohmann::json jn = {{"name", n.name}, {"op", op_name(n.op)}, {"inputs", n.inputs}, {"output", n.output}};
    if (!n.group.empty()) jn["group"] = n.group;
    if (n.op == Op::Conv2d || n.op == Op::Linear) {
      jn["weight"] = n.weight;
      if (!n.bias.empty()) jn["bias"] = n.bias;
      jn["act"] = activation_name(n.act);
    }
    if (n.op == Op::Conv2d) {
      jn["kernel"] = n.kernel;
      jn["stride"] = n.stride;
      jn["groups"] = n.groups;
      if (n.pad.same)
        jn["pad"] = "same";
      else
        jn["pad"] = {n.pad.top, n.pad.left, n.pad.bottom, n.pad.right};
      if (n.fp8_input()) jn["fp8"] = {{"input_scale", n.input_scale}};
      if (n.fp8_weights()) jn["fp8"]["weight_scale"] = n.weight_scale;
    }
    nodes.push_back(jn);
  }
  return j;
}

Graph Graph::from_json(const nlohmann::json& j, const WeightShapeFn& weight_shape) {
  Graph g;
  try {
    KILN_CHECK(j.is_object(), "[graph] not an object");
    const auto& vals = j.at("values");
    KILN_CHECK(vals.is_array() && vals.size() <= 100000, "[graph] bad values list");
    for (const auto& jv : vals) g.add_value(jv.at("channels").get<int>(), jv.value("name", std::string()));
    const auto& nodes = j.at("nodes");
    KILN_CHECK(nodes.is_array() && nodes.size() <= 100000, "[graph] bad nodes list");
    for (const auto& jn : nodes) {
      Node n;
      n.name = jn.at("name").get<std::string>();
      n.op = parse_enum(kOps, jn.at("op").get<std::string>(), "op");
      n.inputs = jn.at("inputs").get<std::vector<int>>();
      n.output = jn.at("output").get<int>();
      n.group = jn.value("group", std::string());
      if (n.op == Op::Conv2d || n.op == Op::Linear) {
        n.weight = jn.at("weight").get<std::string>();
        n.bias = jn.value("bias", std::string());
        n.act = parse_enum(kActs, jn.at("act").get<std::string>(), "activation");
      }
      if (n.op == Op::Conv2d) {
        n.kernel = jn.at("kernel").get<int>();
        n.stride = jn.at("stride").get<int>();
        n.groups = jn.at("groups").get<int>();
        const auto& pad = jn.at("pad");
        if (pad.is_string()) {
          KILN_CHECK(pad.get<std::string>() == "same", "[graph] {}: unknown padding", n.name);
          n.pad.same = true;
        } else {
          auto p = pad.get<std::vector<int>>();
          KILN_CHECK(p.size() == 4, "[graph] {}: padding needs 4 numbers", n.name);
          n.pad = {false, p[0], p[1], p[2], p[3]};
        }
        if (jn.contains("fp8")) {
          n.input_scale = jn["fp8"].at("input_scale").get<float>();
          KILN_CHECK(n.input_scale > 0, "[graph] {}: bad FP8 input scale", n.name);  // 0 would mean "not FP8"
          n.weight_scale = jn["fp8"].value("weight_scale", std::string());
        }
      }
      g.add_node(std::move(n));
    }
    g.input_ = j.at("input").get<int>();
    g.output_ = j.at("output").get<int>();
  } catch (const nlohmann::json::exception& e) {
    fail("[graph] malformed graph: {}", e.what());
  }
  g.validate(weight_shape);
  return g;
}

void Graph::validate(const WeightShapeFn& weight_shape) const {
  const int nv = static_cast<int>(values_.size());
  KILN_CHECK(input_ >= 0 && input_ < nv && output_ >= 0 && output_ < nv, "[graph] input/output id out of range");
  for (const auto& v : values_)
    KILN_CHECK(v.channels > 0 && v.channels <= (1 << 20), "[graph] bad channel count {}", v.channels);
  std::vector<bool> defined(nv, false);
  defined[input_] = true;
  auto expect_weight = [&](const Node& n, const std::string& name, const std::vector<int64_t>& shape) {
    auto s = weight_shape(name);
    KILN_CHECK(s.has_value(), "[graph] {}: weight '{}' is not in the tensor table", n.name, name);
    KILN_CHECK(*s == shape, "[graph] {}: weight '{}' has shape {}, expected {}", n.name, name, shape_string(*s),
               shape_string(shape));
  };
  for (const auto& n : nodes_) {
    size_t arity = (n.op == Op::ScaleChannels || n.op == Op::Add) ? 2 : 1;
    KILN_CHECK(n.inputs.size() == arity, "[graph] {}: {} takes {} inputs", n.name, op_name(n.op), arity);
    for (int in : n.inputs)
      KILN_CHECK(in >= 0 && in < nv && defined[in], "[graph] {}: input {} is not defined before use", n.name, in);
    KILN_CHECK(n.output >= 0 && n.output < nv && !defined[n.output], "[graph] {}: bad output {}", n.name, n.output);
    defined[n.output] = true;
    int cin = values_[n.inputs[0]].channels, cout = values_[n.output].channels;
    switch (n.op) {
      case Op::Conv2d:
        KILN_CHECK(n.kernel >= 1 && n.kernel <= 15 && n.stride >= 1 && n.stride <= 8, "[graph] {}: bad kernel/stride",
                   n.name);
        KILN_CHECK(n.groups >= 1 && cin % n.groups == 0 && cout % n.groups == 0, "[graph] {}: bad groups", n.name);
        KILN_CHECK(n.pad.top >= 0 && n.pad.left >= 0 && n.pad.bottom >= 0 && n.pad.right >= 0 && n.pad.top < n.kernel &&
                       n.pad.left < n.kernel && n.pad.bottom < n.kernel && n.pad.right < n.kernel,
                   "[graph] {}: bad padding", n.name);
        expect_weight(n, n.weight, {cout, n.kernel, n.kernel, cin / n.groups});
        if (!n.bias.empty()) expect_weight(n, n.bias, {cout});
        KILN_CHECK(std::isfinite(n.input_scale) && n.input_scale >= 0, "[graph] {}: bad FP8 input scale", n.name);
        if (n.fp8_weights()) {
          KILN_CHECK(n.fp8_input(), "[graph] {}: FP8 weights need an FP8 input scale", n.name);
          expect_weight(n, n.weight_scale, {cout});
        }
        break;
      case Op::Linear:
        expect_weight(n, n.weight, {cout, cin});
        if (!n.bias.empty()) expect_weight(n, n.bias, {cout});
        break;
      case Op::GlobalAvgPool:
        KILN_CHECK(cin == cout, "[graph] {}: pooling changes channels", n.name);
        break;
      case Op::ScaleChannels:
      case Op::Add:
        KILN_CHECK(cin == cout && values_[n.inputs[1]].channels == cin, "[graph] {}: channel mismatch", n.name);
        break;
    }
  }
  KILN_CHECK(defined[output_], "[graph] output is never computed");
}

}  // namespace kiln
