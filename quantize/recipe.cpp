#include "quantize/recipe.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/json_int.h"
#include "graph/ops/conv2d.h"
#include "graph/ops/linear.h"

namespace kiln {

namespace {

void only_keys(const nlohmann::json& j, const std::set<std::string>& allowed, const std::string& where) {
  KILN_CHECK(j.is_object(), "[recipe] {}: expected an object", where);
  for (auto& [k, v] : j.items()) KILN_CHECK(allowed.count(k), "[recipe] {}: unknown key '{}'", where, k);
}

}  // namespace

QuantRecipe parse_recipe(const nlohmann::json& j, const std::string& where) {
  QuantRecipe r;
  try {
    only_keys(j, {"name", "description", "format", "weights", "activations", "layers", "calibration"}, where);
    r.name = j.at("name").get<std::string>();
    r.description = j.value("description", std::string());
    KILN_CHECK(j.value("format", std::string("e4m3")) == "e4m3", "[recipe] {}: only format e4m3 is supported", where);
    KILN_CHECK(j.value("weights", std::string("per_output_channel")) == "per_output_channel",
               "[recipe] {}: weights must be per_output_channel", where);
    KILN_CHECK(j.value("activations", std::string("per_tensor_static")) == "per_tensor_static",
               "[recipe] {}: activations must be per_tensor_static", where);
    const auto& layers = j.at("layers");
    KILN_CHECK(layers.is_array() && !layers.empty(), "[recipe] {}: 'layers' must be a non-empty list", where);
    for (const auto& l : layers) {
      QuantRule rule;
      rule.kind = l.at("kind").get<std::string>();
      KILN_CHECK(rule.kind == "pointwise" || rule.kind == "depthwise" || rule.kind == "conv" || rule.kind == "linear",
                 "[recipe] {}: layer kind '{}' is not pointwise, depthwise, conv or linear", where, rule.kind);
      if (rule.kind == "linear") {
        only_keys(l, {"kind", "match"}, where + " linear layers");
        rule.match = l.value("match", std::string("*"));
        // fnmatch backtracks over every '*': a handful keeps any layer name's match quick.
        KILN_CHECK(!rule.match.empty() && rule.match.size() <= 256 &&
                       std::count(rule.match.begin(), rule.match.end(), '*') <= 4,
                   "[recipe] {}: bad match pattern '{}' (1-256 characters, at most four '*')", where, rule.match);
        r.layers.push_back(rule);
        continue;
      }
      only_keys(l, {"kind", "min_spatial", "channels", "quantize"}, where + " layers");
      if (l.contains("min_spatial"))
        rule.min_spatial =
            static_cast<int>(json_int(l["min_spatial"], 1, 1 << 20, "[recipe] " + where + " min_spatial"));
      rule.channels = l.value("channels", std::string("any"));
      KILN_CHECK(rule.channels == "any" || rule.channels == "expand" || rule.channels == "reduce",
                 "[recipe] {}: channels '{}' is not any, expand or reduce", where, rule.channels);
      const std::string quantize = l.value("quantize", std::string("input_and_weights"));
      KILN_CHECK(quantize == "input_and_weights" || quantize == "input",
                 "[recipe] {}: quantize '{}' is not input_and_weights or input", where, quantize);
      rule.weights = quantize == "input_and_weights";
      KILN_CHECK(rule.min_spatial >= 1 && rule.min_spatial <= 4096, "[recipe] {}: bad min_spatial", where);
      r.layers.push_back(rule);
    }
    if (j.contains("calibration")) {
      const auto& c = j["calibration"];
      only_keys(c, {"method", "percentile"}, where + " calibration");
      r.calib_method = c.value("method", std::string("max"));
      r.percentile = c.value("percentile", 99.99);
    }
    KILN_CHECK(r.calib_method == "max" || r.calib_method == "percentile" || r.calib_method == "mse",
               "[recipe] {}: calibration method '{}' is not max, percentile or mse", where, r.calib_method);
    KILN_CHECK(r.percentile > 50 && r.percentile <= 100, "[recipe] {}: percentile {} is out of (50, 100]", where,
               r.percentile);
  } catch (const nlohmann::json::exception& e) {
    fail("[recipe] {}: {}", where, e.what());
  }
  r.source = j;
  return r;
}

namespace {

// Whether x reaches the node straight from a graph input, through layout changes only: the
// first layer, which sees the raw input and stays in higher precision.
bool reads_graph_input(const Graph& g, int value, const std::vector<int>& producers) {
  while (g.values()[value].kind == ValueKind::Activation) {
    const Node& p = g.nodes()[producers[value]];
    if (p.op != "transpose" && p.op != "reshape" && p.op != "cast") return false;
    value = p.inputs[0];
  }
  return g.values()[value].kind == ValueKind::Input;
}

}  // namespace

std::vector<Fp8Layer> select_fp8_layers(const ModelDefinition& def, const QuantRecipe& recipe) {
  std::vector<Fp8Layer> out;
  for (const auto& [name, graph] : def.graphs) {
    const auto shapes = graph.infer_shapes(graph.example_bindings());
    const auto producers = graph.producers();
    const auto& nodes = graph.nodes();
    for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
      const Node& n = nodes[i];
      if (n.op != "conv2d" && n.op != "linear") continue;
      static_assert(int{conv2d_input::X} == int{linear_input::X} &&
                    int{conv2d_input::Weight} == int{linear_input::Weight});
      if (reads_graph_input(graph, n.inputs[conv2d_input::X], producers)) continue;
      const int weight = n.inputs[conv2d_input::Weight];
      if (graph.values()[weight].kind != ValueKind::Constant) continue;
      const Fp8Layer layer{name, i, true, graph.values()[weight].name};
      if (n.op == "linear") {
        for (const auto& rule : recipe.layers)
          if (rule.kind == "linear" && fnmatch(rule.match.c_str(), n.name.c_str(), 0) == 0) {
            out.push_back(layer);
            break;
          }
        continue;
      }
      const Shape& w = shapes[weight];
      const Conv2dParams p = conv2d_params(n, w);
      const int64_t cin = w[3] * p.groups, cout = w[0];
      const bool pointwise = is_pointwise(p), depthwise = is_depthwise(p, w);
      const Shape& y = shapes[n.outputs[0]];
      for (const auto& rule : recipe.layers) {
        bool kind =
            rule.kind == "conv" || (rule.kind == "pointwise" && pointwise) || (rule.kind == "depthwise" && depthwise);
        kind = kind && (rule.channels == "any" || (rule.channels == "expand" && cout > cin) ||
                        (rule.channels == "reduce" && cout < cin));
        if (kind && y[1] >= rule.min_spatial && y[2] >= rule.min_spatial) {
          out.push_back({name, i, rule.weights, layer.weight});
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace kiln
