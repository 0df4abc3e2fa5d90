// How families plug in. A family says which `architecture` strings (config.json) it builds; an
// importer recognises a foreign model format on disk (e.g. a TF.js graph model). Shared code
// looks them up here and never names one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "checkpoints/checkpoint.h"
#include "graph/model_definition.h"

namespace kiln {

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;
  virtual std::vector<std::string> architectures() const = 0;
  // Builds the graph and folded weights from a Hugging Face layout checkpoint.
  virtual ModelDefinition build(Checkpoint& checkpoint) const = 0;
  // Quantisation recipes the family ships: name -> recipe JSON text. The first is the default.
  virtual std::vector<std::pair<std::string, std::string>> recipes() const { return {}; }
};

class Importer {
 public:
  virtual ~Importer() = default;
  virtual std::string name() const = 0;
  virtual bool recognizes(const std::string& path) const = 0;
  virtual ModelDefinition import(const std::string& path) const = 0;
};

class FamilyRegistry {
 public:
  static FamilyRegistry& instance();  // with every built-in family registered
  void add(std::unique_ptr<Family> family);
  void add(std::unique_ptr<Importer> importer);
  const Family* find_family(const std::string& architecture) const;
  const Importer* find_importer(const std::string& path) const;
  std::vector<std::string> architectures() const;

 private:
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<std::unique_ptr<Importer>> importers_;
};

// Defined in a file generated from the families/ folders (see CMakeLists.txt).
void register_builtin_families(FamilyRegistry& registry);

}  // namespace kiln
