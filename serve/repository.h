// The model repository: ROOT/<model>/<version>/model.bundle, versions numbered from 1, and an
// optional ROOT/<model>/config.json with the batching settings of every version:
//   {"max_batch_size": 32, "max_queue_delay_us": 500, "preferred_batch_sizes": [32],
//    "max_queue_size": 1024, "instances": 1, "timeout_us": 0, "device": "cuda"}
// Models load at start and through the repository API; every version of a model is served side
// by side, the highest by default.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/batcher.h"

namespace kiln::serve {

// Model names are one path component of letters, digits, '_', '-' and '.', not starting with
// '.'; versions are positive decimal numbers. Anything else never reaches the file system.
bool valid_model_name(const std::string& name);
bool valid_version(const std::string& version);

// A model's config.json; throws kiln::Error naming the file and the key at fault.
BatchingConfig parse_model_config(const std::string& text, const std::string& path, std::string* device);

class Repository {
 public:
  Repository(std::string root, ServableOptions options, Metrics* metrics);
  ~Repository();

  // Every model under the root; one that fails to load is recorded (index(), readiness) and the
  // rest load. Returns the number that failed.
  int load_all();
  // (Re)loads a model's versions; throws ServeError (NotFound, BadRequest with the load error).
  void load(const std::string& name);
  // Stops taking requests for the model, answers the queued ones, then drops it.
  void unload(const std::string& name);
  // A loaded version ("" = the highest); throws ServeError(NotFound).
  std::shared_ptr<Batcher> find(const std::string& name, const std::string& version) const;
  std::vector<std::string> versions(const std::string& name) const;
  // The repository extension's index: [{"name", "version", "state", "reason"}].
  nlohmann::json index() const;
  // Every model found at start loaded.
  bool ready() const;
  void unload_all();

 private:
  struct Model {
    std::map<int64_t, std::shared_ptr<Batcher>> versions;
    std::string state = "UNAVAILABLE", reason;
  };
  std::map<int64_t, std::shared_ptr<Batcher>> load_versions(const std::string& name);

  std::string root_;
  ServableOptions options_;
  Metrics* metrics_;
  std::mutex load_mutex_;  // one load or unload at a time
  mutable std::mutex mutex_;
  std::map<std::string, Model> models_;
};

}  // namespace kiln::serve
