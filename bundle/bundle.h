// Reading and writing .bundle files. A bundle is self-contained: graphs (an image model has
// one, an encoder-decoder two), their tensors, the task's settings (preprocessing, labels),
// provenance, build options and saved kernel choices. Readers treat the file as untrusted.
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
  DType dtype = DType::F32;  // as stored: F16 weights of an fp16 bundle, E4M3 of an FP8 layer
  Shape shape;
  std::span<const uint8_t> bytes;
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
// Fails unless a bundle can be written to `path` (a folder there cannot be replaced): for a
// build to say so before its work, not after.
void check_bundle_path(const std::string& path);

class Bundle {
 public:
  // Opens and fully validates a bundle; throws kiln::Error with a one-line reason.
  static std::shared_ptr<Bundle> open(const std::string& path);
  // Validates an in-memory image (fuzzing); `bytes` must outlive the bundle.
  static std::shared_ptr<Bundle> from_bytes(std::span<const uint8_t> bytes, const std::string& name);

  const nlohmann::json& manifest() const { return manifest_; }
  const std::map<std::string, Graph>& graphs() const { return graphs_; }
  const Graph& graph(const std::string& name) const;  // throws, naming the graphs there are
  // The graph a task runs: the task section's "graph", else the only one.
  const std::string& main_graph() const { return main_graph_; }
  const std::map<std::string, BundleTensor>& tensors() const { return tensors_; }
  const BundleTensor& tensor(const std::string& name) const;
  ConstantLookup constants() const;
  std::string precision() const { return manifest_.at("precision"); }  // checked when the bundle was read
  // How an engine runs this bundle on `device`: fp16 math on a GPU for fp16 and fp8 bundles,
  // and the kernel choices saved at build time.
  EngineOptions engine_options(const std::string& device) const;
  uint64_t file_size() const { return bytes_.size(); }
  uint32_t format_version() const { return format_version_; }  // the header's (bundle/format.h)
  const std::string& path() const { return name_; }

 private:
  void parse();
  void check_descriptive_fields() const;

  uint32_t format_version_ = 0;
  std::string name_;
  std::unique_ptr<MappedFile> file_;
  std::span<const uint8_t> bytes_;
  nlohmann::json manifest_;
  std::map<std::string, Graph> graphs_;
  std::string main_graph_;
  std::map<std::string, BundleTensor> tensors_;
};

// A graph's interface as bundles list it: {"inputs": [{"name", "dtype", "shape"}],
// "outputs": [{"name", "dtype"}], "states": [...]}.
nlohmann::json graph_interface(const Graph& graph);

}  // namespace kiln
