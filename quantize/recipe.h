// Quantisation recipes: data files (a family ships its own under recipes/) that say which layers
// run in FP8 and how activations are calibrated. Parsed strictly: an unknown key is an error.
//
//   {"name": "fp8-pointwise", "description": "...", "format": "e4m3",
//    "weights": "per_output_channel", "activations": "per_tensor_static",
//    "layers": [{"kind": "pointwise", "min_spatial": 2, "channels": "any" | "expand" | "reduce",
//                "quantize": "input_and_weights" | "input"},
//               {"kind": "linear", "match": "*.fc1"}],
//    "calibration": {"method": "max" | "percentile" | "mse", "percentile": 99.99}}
//
// A "linear" rule selects the dense layers (in every graph of the model) whose node name matches
// the glob (fnmatch; default "*"); linears quantise input and weights together.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "graph/model_definition.h"

namespace kiln {

struct QuantRule {
  std::string kind;              // "pointwise" (1x1, groups 1), "depthwise" (groups = channels), "conv" (any conv2d),
                                 // "linear"
  std::string match = "*";       // linear: the node names, a glob
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
// A conv2d or linear node the recipe puts in FP8: its input always, its weights unless the rule
// says "input".
struct Fp8Layer {
  std::string graph;  // the model's graph that holds the node
  int node = -1;
  bool weights = true;
  std::string weight;  // the weight's constant name: the layer's identity across graphs
};
// The nodes the recipe selects, graph by graph (by name) and in graph order; convs judged by
// their output sizes at the graph's example sizes (an image model's input size is fixed). A conv
// or linear reading the graph's input (through layout changes only) is never selected.
std::vector<Fp8Layer> select_fp8_layers(const ModelDefinition& def, const QuantRecipe& recipe);

}  // namespace kiln
