// What a family (or an importer) produces from a checkpoint and what a bundle stores: graphs
// (one for an image model; an encoder and a decoder step for a seq2seq model), their fp32
// weights with constant transforms (batch-norm folding) already applied, and the task's
// settings (preprocessing, labels). Nothing here is specific to one family.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "backends/backend.h"
#include "core/tensor.h"
#include "graph/graph.h"

namespace kiln {

struct ModelDefinition {
  std::string family;
  std::string architecture;
  std::string task;  // e.g. "image_classification"
  // The graphs by name; a single-graph model names its graph "main".
  std::map<std::string, Graph> graphs;
  // The graphs' constants by tensor name, as fp32 values (an i64 constant holds whole numbers;
  // an f8e4m3 constant values on the E4M3 grid).
  std::map<std::string, Tensor> weights;
  nlohmann::json task_config;  // task-specific: preprocessing, labels, which graph runs, ...
  nlohmann::json source;       // where the weights came from: model id, revision, files, hashes

  Graph& graph(const std::string& name = "main") { return graphs.at(name); }
  const Graph& graph(const std::string& name = "main") const { return graphs.at(name); }
  // Checks every graph, and that each constant it reads is a weight of its shape.
  void validate() const;
  // The weights as engines read them; valid while this definition lives.
  ConstantLookup constants() const;
};

}  // namespace kiln
