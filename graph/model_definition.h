// What a family (or an importer) produces from a checkpoint and what a bundle stores: the graph,
// its fp32 weights with constant transforms (batch-norm folding) already applied, and the task's
// settings (preprocessing, labels). Nothing here is specific to one family.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "core/tensor.h"
#include "graph/graph.h"
#include "graph/weights.h"

namespace kiln {

struct ModelDefinition {
  std::string family;
  std::string architecture;
  std::string task;  // e.g. "image_classification"
  Graph graph;
  std::map<std::string, Tensor> weights;
  nlohmann::json task_config;  // task-specific: preprocessing, labels, ...
  nlohmann::json source;       // where the weights came from: model id, revision, files, hashes

  // Checks the graph against the weights' shapes.
  void validate() const;
  // The weights as engines read them; valid while this definition lives.
  WeightLookup weight_lookup() const;
};

}  // namespace kiln
