#include "graph/attrs.h"

#include <cstdint>

#include "core/error.h"
#include "core/json_int.h"

namespace kiln {

namespace {

AttrType type_of(const AttrValue& v) { return static_cast<AttrType>(v.index()); }

}  // namespace

const char* attr_type_name(AttrType t) {
  static const char* names[] = {"int", "float", "string", "int list", "float list"};
  return names[static_cast<int>(t)];
}

const AttrValue& Attrs::get(const std::string& name, AttrType type) const {
  auto it = values_.find(name);
  KILN_CHECK(it != values_.end(), "[attrs] no attribute '{}'", name);
  KILN_CHECK(type_of(it->second) == type, "[attrs] attribute '{}' is a {}, not a {}", name,
             attr_type_name(type_of(it->second)), attr_type_name(type));
  return it->second;
}

int64_t Attrs::get_int(const std::string& name) const { return std::get<int64_t>(get(name, AttrType::Int)); }
double Attrs::get_float(const std::string& name) const { return std::get<double>(get(name, AttrType::Float)); }
const std::string& Attrs::get_string(const std::string& name) const {
  return std::get<std::string>(get(name, AttrType::String));
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& name) const {
  return std::get<std::vector<int64_t>>(get(name, AttrType::Ints));
}
const std::vector<double>& Attrs::get_floats(const std::string& name) const {
  return std::get<std::vector<double>>(get(name, AttrType::Floats));
}

void Attrs::check(const std::vector<AttrSpec>& schema, const std::string& where) {
  for (const auto& [name, value] : values_) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : schema)
      if (s.name == name) spec = &s;
    KILN_CHECK(spec, "[{}] unknown attribute '{}'", where, name);
    // An int where a float is expected is taken as that float (JSON writes 1.0 as 1).
    if (spec->type == AttrType::Float && type_of(value) == AttrType::Int) {
      values_[name] = static_cast<double>(std::get<int64_t>(value));
      continue;
    }
    KILN_CHECK(type_of(value) == spec->type, "[{}] attribute '{}' must be a {}", where, name,
               attr_type_name(spec->type));
  }
  for (const auto& s : schema) {
    if (has(s.name)) continue;
    KILN_CHECK(!s.required, "[{}] missing attribute '{}'", where, s.name);
    values_[s.name] = s.default_value;
  }
}

nlohmann::json Attrs::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& entry : values_) std::visit([&](const auto& v) { j[entry.first] = v; }, entry.second);
  return j;
}

Attrs Attrs::from_json(const nlohmann::json& j, const std::vector<AttrSpec>& schema, const std::string& where) {
  KILN_CHECK(j.is_object(), "[{}] attributes must be an object", where);
  Attrs a;
  for (auto& [name, value] : j.items()) {
    const AttrSpec* spec = nullptr;
    for (const auto& s : schema)
      if (s.name == name) spec = &s;
    KILN_CHECK(spec, "[{}] unknown attribute '{}'", where, name);
    try {
      switch (spec->type) {
        case AttrType::Int:
          a.set(name, json_int(value, INT64_MIN, INT64_MAX, fmt::format("[{}] attribute '{}'", where, name)));
          break;
        case AttrType::Float:
          KILN_CHECK(value.is_number(), "[{}] attribute '{}' must be a number", where, name);
          a.set(name, value.get<double>());
          break;
        case AttrType::String:
          a.set(name, value.get<std::string>());
          break;
        case AttrType::Ints:
          a.set(name, json_ints(value, 64, INT64_MIN, INT64_MAX, fmt::format("[{}] attribute '{}'", where, name)));
          break;
        case AttrType::Floats:
          KILN_CHECK(value.is_array() && value.size() <= 65536, "[{}] attribute '{}' must be a float list", where,
                     name);
          for (const auto& e : value) KILN_CHECK(e.is_number(), "[{}] attribute '{}' must hold numbers", where, name);
          a.set(name, value.get<std::vector<double>>());
          break;
      }
    } catch (const nlohmann::json::exception& e) {
      fail("[{}] attribute '{}': {}", where, name, e.what());
    }
  }
  a.check(schema, where);
  return a;
}

}  // namespace kiln
