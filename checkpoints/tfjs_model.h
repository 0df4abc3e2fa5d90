// Reader for TensorFlow.js "graph-model" folders (model.json + binary weight shards): the graph's
// nodes (name, op, inputs) and its float32 weights by name. Sizes are checked against the shards.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace kiln {

struct TfjsNode {
  std::string op;
  std::vector<std::string> inputs;
  nlohmann::json attr;
};

class TfjsModel {
 public:
  explicit TfjsModel(const std::string& dir);
  static bool looks_like(const std::string& dir);  // a model.json with format "graph-model"

  const std::map<std::string, TfjsNode>& nodes() const { return nodes_; }
  const TfjsNode& node(const std::string& name) const;
  bool has_weight(const std::string& name) const { return weights_.count(name) != 0; }
  const Tensor& weight(const std::string& name) const;
  const std::string& dir() const { return dir_; }
  // sha256 of model.json and each shard, recorded as the bundle's provenance.
  const nlohmann::json& files() const { return files_; }

 private:
  std::string dir_;
  std::map<std::string, TfjsNode> nodes_;
  std::map<std::string, Tensor> weights_;
  nlohmann::json files_ = nlohmann::json::object();
};

}  // namespace kiln
