// Node attributes: a typed map (int, float, string, int list, float list), checked against the
// schema each op declares (graph/op.h) when a node is made or read from a bundle.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kiln {

enum class AttrType { Int, Float, String, Ints, Floats };
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

// One attribute an op takes. Optional attributes have a default.
struct AttrSpec {
  std::string name;
  AttrType type;
  bool required = false;
  AttrValue default_value = int64_t{0};
};
inline AttrSpec required_attr(std::string name, AttrType type) { return {std::move(name), type, true, {}}; }
inline AttrSpec optional_attr(std::string name, AttrType type, AttrValue default_value) {
  return {std::move(name), type, false, std::move(default_value)};
}

const char* attr_type_name(AttrType t);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> values) : values_(values) {}

  void set(const std::string& name, AttrValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttrValue>& values() const { return values_; }

  // Typed reads; a missing attribute or one of another type throws "[op] ...". After
  // check(), every attribute of the schema is present.
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::vector<double>& get_floats(const std::string& name) const;

  // Rejects unknown attributes, missing required ones and wrong types; fills in defaults.
  void check(const std::vector<AttrSpec>& schema, const std::string& where);

  nlohmann::json to_json() const;
  // Reads values by the schema's types; `where` names the node in errors.
  static Attrs from_json(const nlohmann::json& j, const std::vector<AttrSpec>& schema, const std::string& where);

  bool operator==(const Attrs&) const = default;

 private:
  const AttrValue& get(const std::string& name, AttrType type) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace kiln
