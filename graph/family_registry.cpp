#include "graph/family_registry.h"

#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <set>

#include "core/error.h"

namespace kiln {

namespace {

std::vector<std::string> string_list(const toml::table& t, const char* key, const std::string& where) {
  const toml::array* a = t[key].as_array();
  KILN_CHECK(a, "[family] {}: '{}' must be a list of strings", where, key);
  std::vector<std::string> out;
  for (const auto& e : *a) {
    const auto s = e.value<std::string>();
    KILN_CHECK(s.has_value(), "[family] {}: '{}' must be a list of strings", where, key);
    out.push_back(*s);
  }
  return out;
}

std::string string_value(const toml::table& t, const char* key, const std::string& where) {
  const auto s = t[key].value<std::string>();
  KILN_CHECK(s.has_value() && !s->empty(), "[family] {}: '{}' must be a non-empty string", where, key);
  return *s;
}

}  // namespace

FamilyInfo FamilyInfo::parse(const std::string& text, const std::string& where) {
  toml::table t;
  try {
    t = toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    fail("[family] {}: {}", where, e.description());
  }
  static const std::set<std::string> keys = {"name", "task", "architectures", "importers", "default_recipe", "words"};
  for (const auto& [k, v] : t)
    KILN_CHECK(keys.count(std::string(k.str())), "[family] {}: unknown key '{}'", where, k.str());
  FamilyInfo f;
  f.name = string_value(t, "name", where);
  f.task = string_value(t, "task", where);
  f.architectures = string_list(t, "architectures", where);
  f.importers = string_list(t, "importers", where);
  KILN_CHECK(!f.architectures.empty(), "[family] {}: no architectures", where);
  if (t.contains("default_recipe")) f.default_recipe = string_value(t, "default_recipe", where);
  string_list(t, "words", where);  // read by tests/architecture_check.sh
  return f;
}

FamilyRegistry& FamilyRegistry::instance() {
  static FamilyRegistry* registry = [] {
    auto* r = new FamilyRegistry();
    register_builtin_families(*r);
    return r;
  }();
  return *registry;
}

void FamilyRegistry::add(FamilyInfo info, std::unique_ptr<Family> family) {
  KILN_CHECK(!find_by_name(info.name), "[family] {} is registered twice", info.name);
  for (const auto& a : info.architectures)
    KILN_CHECK(!find_family(a), "[family] {}: architecture '{}' belongs to another family", info.name, a);
  auto importers = family->make_importers();
  std::vector<std::string> names;
  for (const auto& i : importers) names.push_back(i->name());
  std::vector<std::string> declared = info.importers;
  std::sort(names.begin(), names.end());
  std::sort(declared.begin(), declared.end());
  KILN_CHECK(names == declared, "[family] {}: family.toml names importers {} but the family makes {}", info.name,
             fmt::join(declared, ", "), fmt::join(names, ", "));
  bool default_found = info.default_recipe.empty();
  for (const auto& [name, text] : info.recipes) default_found = default_found || name == info.default_recipe;
  KILN_CHECK(default_found, "[family] {}: default recipe '{}' is not in recipes/", info.name, info.default_recipe);
  family->info_ = std::move(info);
  families_.push_back(std::move(family));
  for (auto& i : importers) importers_.push_back(std::move(i));
}

const Family* FamilyRegistry::find_family(const std::string& architecture) const {
  for (const auto& f : families_)
    for (const auto& a : f->info().architectures)
      if (a == architecture) return f.get();
  return nullptr;
}

const Family* FamilyRegistry::find_by_name(const std::string& name) const {
  for (const auto& f : families_)
    if (f->name() == name) return f.get();
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
    for (const auto& a : f->info().architectures) out.push_back(a);
  return out;
}

std::vector<const Family*> FamilyRegistry::families() const {
  std::vector<const Family*> out;
  for (const auto& f : families_) out.push_back(f.get());
  return out;
}

}  // namespace kiln
