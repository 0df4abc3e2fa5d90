// A checkpoint on disk in Hugging Face layout: config.json plus model.safetensors (or shards
// listed in model.safetensors.index.json), or else PyTorch's pytorch_model.bin (or shards
// listed in pytorch_model.bin.index.json), read by a restricted unpickler. Families read
// tensors by name through this.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "checkpoints/safetensors.h"

namespace kiln {

// One weights file: safetensors or torch.save.
class TensorFile {
 public:
  virtual ~TensorFile() = default;
  virtual std::vector<std::string> names() const = 0;
  virtual std::vector<int64_t> shape(const std::string& name) const = 0;
  virtual Tensor to_float(const std::string& name) const = 0;
};

class Checkpoint {
 public:
  explicit Checkpoint(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const nlohmann::json& config() const { return config_; }
  bool has(const std::string& name) const;
  std::vector<int64_t> shape(const std::string& name) const;
  // Reads a tensor as fp32 and marks it used, so that unused tensors can be reported.
  Tensor load(const std::string& name);
  std::vector<std::string> names() const;
  // Names never loaded; a family calls this after building to reject unexpected tensors.
  std::vector<std::string> unused() const;
  // Marks tensors that carry no weights (e.g. BatchNorm's num_batches_tracked) as used.
  void ignore(const std::string& name) { used_.insert(name); }

 private:
  const TensorFile& file_for(const std::string& name) const;

  std::string dir_;
  nlohmann::json config_;
  std::vector<std::unique_ptr<TensorFile>> files_;
  std::map<std::string, size_t> owner_;  // tensor name -> index in files_
  std::set<std::string> used_;
};

nlohmann::json read_json_file(const std::string& path, const char* what);

// The architecture a config.json names: timm's "architecture", transformers' "architectures"[0], or
// Ultralytics' hub mixin's "model", the yaml file the model was made from ("<architecture>.yaml");
// "" when none.
std::string config_architecture(const nlohmann::json& config);

}  // namespace kiln
