#include "graph/family_registry.h"

namespace kiln {

FamilyRegistry& FamilyRegistry::instance() {
  static FamilyRegistry* registry = [] {
    auto* r = new FamilyRegistry();
    register_builtin_families(*r);
    return r;
  }();
  return *registry;
}

void FamilyRegistry::add(std::unique_ptr<Family> family) { families_.push_back(std::move(family)); }
void FamilyRegistry::add(std::unique_ptr<Importer> importer) { importers_.push_back(std::move(importer)); }

const Family* FamilyRegistry::find_family(const std::string& architecture) const {
  for (const auto& f : families_)
    for (const auto& a : f->architectures())
      if (a == architecture) return f.get();
  return nullptr;
}

const Importer* FamilyRegistry::find_importer(const std::string& path) const {
  for (const auto& i : importers_)
    if (i->recognizes(path)) return i.get();
  return nullptr;
}

std::vector<std::string> FamilyRegistry::architectures() const {
  std::vector<std::string> out;
  for (const auto& f : families_)
    for (const auto& a : f->architectures()) out.push_back(a);
  return out;
}

}  // namespace kiln
