// Quantisation recipes: data files (a family ships its own under recipes/) that say which layers
// run in FP8 and how activations are calibrated. Parsed strictly: an unknown key is an error.
//
//   {"name": "fp8-pointwise", "description": "...", "format": "e4m3",
//    "weights": "per_output_channel", "activations": "per_tensor_static",
//    "layers": [{"kind": "pointwise", "min_spatial": 2, "channels": "any" | "expand" | "reduce",
//                "quantize": "input_and_weights" | "input"}],
//    "calibration": {"method": "max" | "percentile" | "mse", "percentile": 99.99}}
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln {

struct QuantRule {
  std::string kind;              // "pointwise" (1x1, groups 1), "depthwise" (groups = channels), "conv" (any conv2d)
  int min_spatial = 1;           // only layers whose output map is at least this many pixels on each side
  std::string channels = "any";  // "expand": out > in channels; "reduce": out < in; "any"
  bool weights = true;           // "quantize": "input" keeps the weights in higher precision
};

struct QuantRecipe {
  std::string name, description;
  std::vector<QuantRule> layers;
  std::string calib_method = "max";
  double percentile = 99.99;
  nlohmann::json source;  // the recipe as read, stored in the bundle
};

QuantRecipe parse_recipe(const nlohmann::json& j, const std::string& where);
// A conv2d node the recipe puts in FP8: its input always, its weights unless the rule says "input".
struct Fp8Layer {
  int node = -1;
  bool weights = true;
};
// The conv2d nodes the recipe selects, in graph order, judged by their output sizes at the
// graph's example sizes (an image model's input size is fixed). The first conv is never selected.
std::vector<Fp8Layer> select_fp8_layers(const Graph& graph, const QuantRecipe& recipe);
std::vector<int> node_indices(const std::vector<Fp8Layer>& layers);

}  // namespace kiln
