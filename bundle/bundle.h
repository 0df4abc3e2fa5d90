// Reading and writing .bundle files. A bundle is self-contained: graph, weights, task settings
// (preprocessing, labels), provenance and build options. Readers treat the file as untrusted.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <span>
#include <string>

#include "backends/engine.h"
#include "core/mapped_file.h"
#include "graph/graph.h"
#include "graph/model_definition.h"

namespace kiln {

struct BundleTensor {
  std::string dtype;  // "F32", "F16" or "F8_E4M3"
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;
  // The data as fp32: a view for F32 tensors, converted into `storage` for F16.
  std::span<const float> as_float(std::vector<float>& storage) const;
};

struct BuildInfo {
  std::string model_id;  // what the user passed to `kiln build`
  std::string revision;  // commit hash where known
  std::string precision = "fp32";
  std::vector<int> batch_sizes = {1};
  nlohmann::json options = nlohmann::json::object();
  nlohmann::json plans = nlohmann::json::object();  // per backend: kernel choices and the device timed on
};

// Writes `def` to `path` atomically (temp file + rename). Returns the bytes written.
uint64_t write_bundle(const std::string& path, const ModelDefinition& def, const BuildInfo& info);

class Bundle {
 public:
  // Opens and fully validates a bundle; throws kiln::Error with a one-line reason.
  static std::shared_ptr<Bundle> open(const std::string& path);
  // Validates an in-memory image (fuzzing); `bytes` must outlive the bundle.
  static std::shared_ptr<Bundle> from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  const nlohmann::json& manifest() const { return manifest_; }
  const Graph& graph() const { return graph_; }
  const std::map<std::string, BundleTensor>& tensors() const { return tensors_; }
  const BundleTensor& tensor(const std::string& name) const;
  // Weights as fp32 for the engines (F16 tensors converted once and kept).
  WeightLookup weights() const;
  uint64_t file_size() const { return bytes_.size(); }
  const std::string& path() const { return name_; }

 private:
  void parse();

  std::string name_;
  std::unique_ptr<MappedFile> file_;
  std::span<const uint8_t> bytes_;
  nlohmann::json manifest_;
  Graph graph_;
  std::map<std::string, BundleTensor> tensors_;
  mutable std::map<std::string, std::vector<float>> converted_;
};

}  // namespace kiln
