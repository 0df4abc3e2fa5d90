// How families plug in. A family is a folder families/<name>/ whose family.toml registers it:
// its name, task, the `architecture` strings (config.json) it builds, its importers of foreign
// formats (e.g. a TF.js graph model), its default quantisation recipe. The build compiles that
// file, the family's recipes/*.json and manifests/*.toml into kiln and calls the family's
// KILN_FAMILY function for the builder; shared code looks families up here and never names one.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoints/checkpoint.h"
#include "graph/model_definition.h"

namespace kiln {

struct FamilyInfo {
  std::string name, task, default_recipe;
  std::vector<std::string> architectures, importers;
  std::vector<std::pair<std::string, std::string>> recipes;    // name -> JSON text
  std::vector<std::pair<std::string, std::string>> manifests;  // file name -> TOML text
  // Reads family.toml; every key is required and unknown keys are errors.
  static FamilyInfo parse(const std::string& toml_text, const std::string& where);
};

class Importer {
 public:
  virtual ~Importer() = default;
  virtual std::string name() const = 0;
  virtual bool recognizes(const std::string& path) const = 0;
  virtual ModelDefinition import(const std::string& path) const = 0;
};

class Family {
 public:
  virtual ~Family() = default;
  // Builds the graphs and folded weights from a Hugging Face layout checkpoint.
  virtual ModelDefinition build(Checkpoint& checkpoint) const = 0;
  // The importers family.toml names.
  virtual std::vector<std::unique_ptr<Importer>> make_importers() const { return {}; }

  const FamilyInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }

 private:
  friend class FamilyRegistry;
  FamilyInfo info_;
};

class FamilyRegistry {
 public:
  static FamilyRegistry& instance();  // with every built-in family registered
  // Registers a family under its family.toml; its importers must be the ones the file names.
  void add(FamilyInfo info, std::unique_ptr<Family> family);
  const Family* find_family(const std::string& architecture) const;
  const Family* find_by_name(const std::string& name) const;
  const Importer* find_importer(const std::string& path) const;
  std::vector<std::string> architectures() const;
  std::vector<const Family*> families() const;

 private:
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<std::unique_ptr<Importer>> importers_;
};

// Defined in a file the build generates from families/*/family.toml (see CMakeLists.txt).
void register_builtin_families(FamilyRegistry& registry);

}  // namespace kiln

// The family's builder, in its folder: KILN_FAMILY(<folder name>) { return std::make_unique<MyFamily>(); }
#define KILN_FAMILY(name) std::unique_ptr<::kiln::Family> kiln_make_family_##name()
