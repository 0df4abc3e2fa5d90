#include "graph/graph.h"

#include <algorithm>
#include <queue>
#include <set>

#include "core/checked_math.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/json_int.h"

namespace kiln {

namespace {

constexpr size_t kMaxValues = 1 << 20, kMaxNodes = 1 << 20, kMaxNodeArity = 4096, kMaxRank = 8;
constexpr int64_t kMaxDim = int64_t{1} << 40;

const char* kind_name(ValueKind k) {
  static const char* names[] = {"activation", "input", "constant", "state"};
  return names[static_cast<int>(k)];
}

ValueKind parse_kind(const std::string& s) {
  for (int k = 0; k < 4; ++k)
    if (s == kind_name(static_cast<ValueKind>(k))) return static_cast<ValueKind>(k);
  fail("[graph] unknown value kind '{}'", s);
}

bool is_identifier(const std::string& s) {
  if (s.empty() || s.size() > 64 || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

nlohmann::json shape_json(const ShapeSpec& shape) {
  nlohmann::json j = nlohmann::json::array();
  for (const Dim& d : shape) {
    if (d.is_symbol())
      j.push_back(d.symbol);
    else
      j.push_back(d.value);
  }
  return j;
}

ShapeSpec parse_shape(const nlohmann::json& j, const std::string& what) {
  KILN_CHECK(j.is_array() && j.size() <= kMaxRank, "[graph] {}: shape must be a list of at most {} dims", what,
             kMaxRank);
  ShapeSpec s;
  for (const auto& d : j) {
    if (d.is_string()) {
      const std::string sym = d.get<std::string>();
      KILN_CHECK(is_identifier(sym), "[graph] {}: '{}' is not a symbol name", what, sym);
      s.push_back({0, sym});
    } else {
      s.push_back({json_int(d, 0, kMaxDim, fmt::format("[graph] {}: a dim", what)), {}});
    }
  }
  return s;
}

// An in-place node's (output, the input value it updates) pairs; none for other nodes.
std::vector<std::pair<int, int>> in_place_targets(const Node& n) {
  std::vector<std::pair<int, int>> targets;
  if (!n.def().in_place()) return targets;
  for (size_t o = 0; o < n.outputs.size(); ++o)
    if (const int slot = n.def().aliases_input(static_cast<int>(o)); slot >= 0)
      targets.emplace_back(n.outputs[o], n.inputs[slot]);
  return targets;
}

void check_declared_shape(const ShapeSpec& shape, const std::string& what) {
  KILN_CHECK(shape.size() <= kMaxRank, "[graph] {}: rank {} is over {}", what, shape.size(), kMaxRank);
  for (const Dim& d : shape) {
    if (d.is_symbol())
      KILN_CHECK(is_identifier(d.symbol), "[graph] {}: '{}' is not a symbol name", what, d.symbol);
    else
      KILN_CHECK(d.value >= 0 && d.value <= kMaxDim, "[graph] {}: bad dim {}", what, d.value);
  }
}

}  // namespace

int Graph::add_value(Value v) {
  KILN_CHECK(values_.size() < kMaxValues, "[graph] too many values");
  values_.push_back(std::move(v));
  return static_cast<int>(values_.size()) - 1;
}

int Graph::add_input(const std::string& name, DType dtype, ShapeSpec shape) {
  KILN_CHECK(!name.empty() && !find_value(name), "[graph] input name '{}' is empty or taken", name);
  check_declared_shape(shape, name);
  for (const Dim& d : shape)
    if (d.is_symbol() && !symbols_.count(d.symbol)) symbols_[d.symbol] = {};
  return add_value({ValueKind::Input, dtype, name, std::move(shape)});
}

int Graph::add_constant(const std::string& tensor, DType dtype, const Shape& shape) {
  KILN_CHECK(!tensor.empty(), "[graph] a constant needs a tensor name");
  for (size_t v = 0; v < values_.size(); ++v) {
    const Value& x = values_[v];
    if (x.kind != ValueKind::Constant || x.name != tensor) continue;
    KILN_CHECK(x.dtype == dtype && x.shape == fixed_shape(shape), "[graph] constant '{}' added twice, differently",
               tensor);
    return static_cast<int>(v);
  }
  ShapeSpec spec = fixed_shape(shape);
  check_declared_shape(spec, tensor);
  return add_value({ValueKind::Constant, dtype, tensor, std::move(spec)});
}

int Graph::add_state(const std::string& name, DType dtype, ShapeSpec shape) {
  KILN_CHECK(!name.empty() && !find_value(name), "[graph] state name '{}' is empty or taken", name);
  check_declared_shape(shape, name);
  for (const Dim& d : shape)
    if (d.is_symbol() && !symbols_.count(d.symbol)) symbols_[d.symbol] = {};
  return add_value({ValueKind::State, dtype, name, std::move(shape)});
}

void Graph::check_node_signature(Node& n) const {
  const OpDef& def = OpRegistry::instance().get(n.op);
  const auto slots = def.inputs();
  const std::string where = n.op + "] " + n.name;  // "[op] name: ..."
  KILN_CHECK(!n.name.empty(), "[graph] a {} node has no name", n.op);
  KILN_CHECK(n.inputs.size() <= kMaxNodeArity, "[{}: too many inputs", where);
  if (def.variadic()) {
    KILN_CHECK(n.inputs.size() >= slots.size(), "[{}: takes at least {} inputs", where, slots.size());
  } else {
    size_t required = 0;
    for (const auto& s : slots) required += !s.optional;
    KILN_CHECK(n.inputs.size() >= required && n.inputs.size() <= slots.size(), "[{}: takes {} to {} inputs, got {}",
               where, required, slots.size(), n.inputs.size());
  }
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const bool optional = i < slots.size() ? slots[i].optional : false;
    const int v = n.inputs[i];
    KILN_CHECK((v == -1 && optional) || (v >= 0 && v < static_cast<int>(values_.size())),
               "[{}: input {} ({}) is not a value", where, i, i < slots.size() ? slots[i].name : slots.back().name);
  }
  n.attrs.check(def.attributes(), n.op + "] " + n.name);
  def.check_attrs(n);
}

std::vector<DType> Graph::infer_node_dtypes(const Node& n) const {
  std::vector<std::optional<DType>> in;
  for (int v : n.inputs) in.push_back(v < 0 ? std::nullopt : std::optional<DType>(values_[v].dtype));
  auto out = n.def().infer_dtypes(n, in);
  KILN_CHECK(static_cast<int>(out.size()) == n.def().num_outputs(n), "[graph] {}: op {} inferred {} outputs", n.name,
             n.op, out.size());
  return out;
}

std::vector<int> Graph::add_node(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs,
                                 const std::string& group) {
  KILN_CHECK(nodes_.size() < kMaxNodes, "[graph] too many nodes");
  Node n{name, op, std::move(inputs), {}, std::move(attrs), group, {}};
  check_node_signature(n);  // activations exist only as outputs of earlier nodes: order holds
  for (DType t : infer_node_dtypes(n)) n.outputs.push_back(add_value({ValueKind::Activation, t, {}, {}}));
  nodes_.push_back(std::move(n));
  return nodes_.back().outputs;
}

int Graph::add(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs,
               const std::string& group) {
  auto out = add_node(op, name, std::move(inputs), std::move(attrs), group);
  KILN_CHECK(out.size() == 1, "[graph] {}: op {} has {} outputs; use add_node", name, op, out.size());
  return out[0];
}

void Graph::add_output(const std::string& name, int value) {
  KILN_CHECK(!name.empty() && !find_output(name), "[graph] output name '{}' is empty or taken", name);
  KILN_CHECK(value >= 0 && value < static_cast<int>(values_.size()), "[graph] output '{}' is not a value", name);
  outputs_.push_back({name, value});
}

std::vector<int> Graph::inputs() const {
  std::vector<int> out;
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind == ValueKind::Input) out.push_back(static_cast<int>(v));
  return out;
}

std::vector<int> Graph::states() const {
  std::vector<int> out;
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind == ValueKind::State) out.push_back(static_cast<int>(v));
  return out;
}

std::optional<int> Graph::find_value(const std::string& name) const {
  if (name.empty()) return std::nullopt;
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind != ValueKind::Constant && values_[v].name == name) return static_cast<int>(v);
  return std::nullopt;
}

std::optional<int> Graph::find_output(const std::string& name) const {
  for (size_t i = 0; i < outputs_.size(); ++i)
    if (outputs_[i].name == name) return static_cast<int>(i);
  return std::nullopt;
}

Bindings Graph::example_bindings() const {
  Bindings b;
  for (const auto& [name, spec] : symbols_) b[name] = spec.example;
  return b;
}

Bindings Graph::bind(const std::map<std::string, Shape>& shapes) const {
  std::vector<std::pair<int, const Shape*>> values;
  for (const auto& [name, shape] : shapes) {
    auto v = find_value(name);
    KILN_CHECK(v && (values_[*v].kind == ValueKind::Input || values_[*v].kind == ValueKind::State),
               "[graph] there is no input named '{}'", name);
    values.emplace_back(*v, &shape);
  }
  return bind(values);
}

Bindings Graph::bind(const std::vector<std::pair<int, const Shape*>>& values) const {
  Bindings b;
  for (const auto& [v, given] : values) {
    const Shape& shape = *given;
    const std::string& name = values_[v].name;
    const ShapeSpec& spec = values_[v].shape;
    KILN_CHECK(shape.size() == spec.size(), "[graph] input '{}' must have shape {}, got {}", name, to_string(spec),
               to_string(shape));
    for (size_t i = 0; i < spec.size(); ++i) {
      if (!spec[i].is_symbol()) {
        KILN_CHECK(shape[i] == spec[i].value, "[graph] input '{}' must have shape {}, got {}", name, to_string(spec),
                   to_string(shape));
        continue;
      }
      auto [it, fresh] = b.emplace(spec[i].symbol, shape[i]);
      KILN_CHECK(fresh || it->second == shape[i], "[graph] '{}' is {} in one input and {} in '{}'", spec[i].symbol,
                 it->second, shape[i], name);
    }
  }
  return b;
}

std::vector<Shape> Graph::infer_shapes(const Bindings& bindings) const {
  for (const auto& [name, size] : bindings) {
    auto it = symbols_.find(name);
    const SymbolSpec spec = it == symbols_.end() ? SymbolSpec{} : it->second;
    KILN_CHECK(size >= 1 && size <= spec.max, "[graph] {} = {} is out of range (1 to {})", name, size, spec.max);
    KILN_CHECK(size % spec.multiple == 0, "[graph] {} = {} is not a multiple of {}", name, size, spec.multiple);
  }
  std::vector<Shape> shapes(values_.size());
  for (size_t v = 0; v < values_.size(); ++v)
    if (values_[v].kind != ValueKind::Activation) shapes[v] = resolve(values_[v].shape, bindings);
  std::vector<std::optional<Shape>> in;
  for (const Node& n : nodes_) {
    in.clear();
    for (int v : n.inputs) in.push_back(v < 0 ? std::nullopt : std::optional<Shape>(shapes[v]));
    auto out = n.def().infer_shapes(n, in);
    KILN_CHECK(out.size() == n.outputs.size(), "[graph] {}: {} output shapes for {} outputs", n.name, out.size(),
               n.outputs.size());
    for (size_t i = 0; i < out.size(); ++i) {
      KILN_CHECK(out[i].size() <= kMaxRank, "[{}] {}: output rank {} is over {}", n.op, n.name, out[i].size(),
                 kMaxRank);
      for (int64_t d : out[i]) KILN_CHECK(d >= 0, "[{}] {}: negative output dim", n.op, n.name);
      checked_mul(checked_numel(out[i], "output"), 8, "output bytes");
      shapes[n.outputs[i]] = std::move(out[i]);
    }
  }
  return shapes;
}

nlohmann::json Graph::to_json() const {
  nlohmann::json j;
  auto& syms = j["symbols"] = nlohmann::json::object();
  for (const auto& [name, s] : symbols_) {
    syms[name] = {{"example", s.example}, {"max", s.max}};
    if (s.multiple != 1) syms[name]["multiple"] = s.multiple;
  }
  auto& vals = j["values"] = nlohmann::json::array();
  for (const auto& v : values_) {
    nlohmann::json jv = {{"dtype", dtype_name(v.dtype)}};
    if (v.kind != ValueKind::Activation) {
      jv["kind"] = kind_name(v.kind);
      jv["shape"] = shape_json(v.shape);
    }
    if (!v.name.empty()) jv["name"] = v.name;
    vals.push_back(jv);
  }
  auto& nodes = j["nodes"] = nlohmann::json::array();
  for (const auto& n : nodes_) {
    nlohmann::json jn = {
        {"name", n.name}, {"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}, {"attrs", n.attrs.to_json()}};
    if (!n.group.empty()) jn["group"] = n.group;
    nodes.push_back(jn);
  }
  auto& outs = j["outputs"] = nlohmann::json::array();
  for (const auto& o : outputs_) outs.push_back({{"name", o.name}, {"value", o.value}});
  return j;
}

Graph Graph::from_json(const nlohmann::json& j, const ConstantInfoFn& constants) {
  Graph g;
  try {
    KILN_CHECK(j.is_object(), "[graph] not an object");
    const nlohmann::json symbols = j.value("symbols", nlohmann::json::object());  // items() needs a named object
    for (auto& [name, s] : symbols.items()) {
      KILN_CHECK(is_identifier(name), "[graph] '{}' is not a symbol name", name);
      const std::string what = fmt::format("[graph] symbol '{}'", name);
      SymbolSpec spec{json_int(s.at("example"), 1, kMaxDim, what + ": example"),
                      json_int(s.at("max"), 1, kMaxDim, what + ": max"),
                      s.contains("multiple") ? json_int(s.at("multiple"), 1, kMaxDim, what + ": multiple") : 1};
      KILN_CHECK(spec.example <= spec.max, "{}: example {} is over max {}", what, spec.example, spec.max);
      KILN_CHECK(spec.example % spec.multiple == 0, "{}: example {} is not a multiple of {}", what, spec.example,
                 spec.multiple);
      g.symbols_[name] = spec;
    }
    const auto& vals = j.at("values");
    KILN_CHECK(vals.is_array() && vals.size() <= kMaxValues, "[graph] bad values list");
    for (const auto& jv : vals) {
      Value v;
      v.kind = parse_kind(jv.value("kind", std::string("activation")));
      v.dtype = parse_dtype(jv.at("dtype").get<std::string>());
      v.name = jv.value("name", std::string());
      KILN_CHECK(v.name.size() <= 1024, "[graph] a value name is too long");
      if (v.kind != ValueKind::Activation) {
        KILN_CHECK(!v.name.empty(), "[graph] a {} value has no name", kind_name(v.kind));
        v.shape = parse_shape(jv.at("shape"), v.name);
      }
      if (v.kind == ValueKind::Constant) {
        auto info = constants(v.name);
        KILN_CHECK(info.has_value(), "[graph] constant '{}' is not in the tensor table", v.name);
        KILN_CHECK(fixed_shape(info->shape) == v.shape,
                   "[graph] constant '{}' has shape {} in the tensor table, {} "
                   "in the graph",
                   v.name, to_string(info->shape), to_string(v.shape));
        // Float constants may be stored narrower than the graph computes with (fp16 bundles).
        KILN_CHECK(info->dtype == v.dtype || (is_float(info->dtype) && is_float(v.dtype) && v.dtype != DType::F8E4M3),
                   "[graph] constant '{}' is {} in the tensor table, {} in the graph", v.name,
                   storage_name(info->dtype), dtype_name(v.dtype));
      }
      g.values_.push_back(std::move(v));
    }
    for (const auto& v : g.values_)
      for (const Dim& d : v.shape)
        KILN_CHECK(!d.is_symbol() || g.symbols_.count(d.symbol), "[graph] symbol '{}' is not declared", d.symbol);
    const auto& nodes = j.at("nodes");
    KILN_CHECK(nodes.is_array() && nodes.size() <= kMaxNodes, "[graph] bad nodes list");
    for (const auto& jn : nodes) {
      Node n;
      n.name = jn.at("name").get<std::string>();
      n.op = jn.at("op").get<std::string>();
      KILN_CHECK(n.name.size() <= 1024 && n.op.size() <= 64, "[graph] a node name is too long");
      const OpDef* def = OpRegistry::instance().find(n.op);
      KILN_CHECK(def, "[graph] {}: unknown op '{}'", n.name, n.op);
      // Value ids; -1 marks an absent optional input.
      const int64_t last = static_cast<int64_t>(kMaxValues) - 1;
      for (int64_t id : json_ints(jn.at("inputs"), kMaxNodeArity, -1, last, "[graph] " + n.name + ": inputs"))
        n.inputs.push_back(static_cast<int>(id));
      for (int64_t id : json_ints(jn.at("outputs"), kMaxNodeArity, 0, last, "[graph] " + n.name + ": outputs"))
        n.outputs.push_back(static_cast<int>(id));
      n.attrs = Attrs::from_json(jn.value("attrs", nlohmann::json::object()), def->attributes(), n.op + "] " + n.name);
      n.group = jn.value("group", std::string());
      g.nodes_.push_back(std::move(n));
    }
    for (const auto& jo : j.at("outputs"))
      g.outputs_.push_back({jo.at("name").get<std::string>(),
                            static_cast<int>(json_int(jo.at("value"), 0, static_cast<int64_t>(kMaxValues) - 1,
                                                      "[graph] an output's value"))});
  } catch (const nlohmann::json::exception& e) {
    fail("[graph] malformed graph: {}", e.what());
  }
  g.validate();
  return g;
}

void Graph::validate() const {
  const int nv = static_cast<int>(values_.size());
  std::set<std::string> names, constants;
  for (const auto& v : values_) {
    check_declared_shape(v.shape, v.name);
    if (v.kind == ValueKind::Activation) {
      KILN_CHECK(v.shape.empty(), "[graph] activation '{}' declares a shape", v.name);
      continue;
    }
    if (v.kind == ValueKind::Constant) {
      KILN_CHECK(constants.insert(v.name).second, "[graph] constant '{}' appears twice", v.name);
      for (const Dim& d : v.shape) KILN_CHECK(!d.is_symbol(), "[graph] constant '{}' has a symbolic dim", v.name);
    } else {
      KILN_CHECK(!v.name.empty() && names.insert(v.name).second, "[graph] {} name '{}' is empty or taken",
                 kind_name(v.kind), v.name);
    }
  }
  std::vector<bool> defined(nv, false);
  for (int v = 0; v < nv; ++v) defined[v] = values_[v].kind != ValueKind::Activation;
  std::set<std::string> node_names;
  std::set<int> in_place_outputs;  // values that are a state's memory, updated
  for (const Node& n0 : nodes_) {
    KILN_CHECK(node_names.insert(n0.name).second, "[graph] two nodes are named '{}'", n0.name);
    Node n = n0;
    check_node_signature(n);
    KILN_CHECK(n.attrs == n0.attrs, "[graph] {}: attributes are not complete", n.name);
    for (int v : n.inputs)
      KILN_CHECK(v < 0 || defined[v], "[graph] {}: reads value {} before it is written", n.name, v);
    std::set<int> targets;
    for (const auto& [output, target] : in_place_targets(n)) {
      KILN_CHECK(values_[target].kind == ValueKind::State || in_place_outputs.count(target),
                 "[graph] {}: {} updates its input in place; that input must be a state", n.name, n.op);
      KILN_CHECK(targets.insert(target).second, "[graph] {}: {} updates one value twice", n.name, n.op);
      in_place_outputs.insert(output);
    }
    // Nor may it read what it updates through another input.
    for (size_t s = 0; s < n.inputs.size(); ++s) {
      bool aliased = false;
      for (size_t o = 0; o < n.outputs.size(); ++o)
        aliased = aliased || n.def().aliases_input(static_cast<int>(o)) == static_cast<int>(s);
      KILN_CHECK(aliased || !targets.count(n.inputs[s]), "[graph] {}: {} reads a value it updates in place", n.name,
                 n.op);
    }
    auto dtypes = infer_node_dtypes(n);
    KILN_CHECK(n.outputs.size() == dtypes.size(), "[graph] {}: {} outputs, the op makes {}", n.name, n.outputs.size(),
               dtypes.size());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const int v = n.outputs[i];
      KILN_CHECK(v >= 0 && v < nv && values_[v].kind == ValueKind::Activation && !defined[v],
                 "[graph] {}: output {} is not a fresh activation", n.name, v);
      KILN_CHECK(values_[v].dtype == dtypes[i], "[graph] {}: output {} is recorded as {}, the op makes {}", n.name, i,
                 dtype_name(values_[v].dtype), dtype_name(dtypes[i]));
      defined[v] = true;
    }
  }
  std::set<std::string> out_names;
  for (const auto& o : outputs_) {
    KILN_CHECK(!o.name.empty() && out_names.insert(o.name).second, "[graph] output name '{}' is empty or taken",
               o.name);
    KILN_CHECK(o.value >= 0 && o.value < nv && defined[o.value], "[graph] output '{}' is never computed", o.name);
  }
  KILN_CHECK(!outputs_.empty() || !in_place_outputs.empty(), "[graph] the graph has no outputs and updates no state");
  // A value updated in place is read by its updater and otherwise only by nodes the updater
  // depends on (a gather of the rows it then writes back): later readers read the update's
  // output, which orders them after the write.
  const auto readers = consumers();
  const auto writer = producers();
  for (size_t v = 0; v < values_.size(); ++v)
    for (int c : readers[v]) {
      const auto targets = in_place_targets(nodes_[c]);
      if (std::none_of(targets.begin(), targets.end(), [&](const auto& t) { return t.second == static_cast<int>(v); }))
        continue;
      std::set<int> before;  // the nodes c depends on
      std::vector<int> todo = {c};
      while (!todo.empty()) {
        const int at = todo.back();
        todo.pop_back();
        for (int in : nodes_[at].inputs)
          if (in >= 0 && writer[in] >= 0 && before.insert(writer[in]).second) todo.push_back(writer[in]);
      }
      for (int r : readers[v])
        KILN_CHECK(r == c || before.count(r), "[graph] {}: value {} is updated in place but also read by {}",
                   nodes_[c].name, v, nodes_[r].name);
    }
  for (const auto& v : values_)
    for (const Dim& d : v.shape)
      KILN_CHECK(!d.is_symbol() || symbols_.count(d.symbol), "[graph] symbol '{}' is not declared", d.symbol);
  infer_shapes(example_bindings());
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(values_.size());
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (int v : nodes_[i].inputs)
      if (v >= 0 && (c[v].empty() || c[v].back() != static_cast<int>(i))) c[v].push_back(static_cast<int>(i));
  return c;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(values_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (int v : nodes_[i].outputs) p[v] = static_cast<int>(i);
  return p;
}

void Graph::refresh_dtypes(int node) {
  Node& n = nodes_.at(node);
  check_node_signature(n);
  auto dtypes = infer_node_dtypes(n);
  for (size_t i = 0; i < dtypes.size(); ++i) values_[n.outputs[i]].dtype = dtypes[i];
}

void Graph::remove_nodes(const std::vector<bool>& dead) {
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!dead[i]) kept.push_back(std::move(nodes_[i]));
  nodes_ = std::move(kept);
  std::vector<bool> used(values_.size(), false);
  for (size_t v = 0; v < values_.size(); ++v)
    used[v] = values_[v].kind == ValueKind::Input || values_[v].kind == ValueKind::State;
  for (const Node& n : nodes_) {
    for (int v : n.inputs)
      if (v >= 0) used[v] = true;
    for (int v : n.outputs) used[v] = true;
  }
  for (const auto& o : outputs_) used[o.value] = true;
  std::vector<int> remap(values_.size(), -1);
  std::vector<Value> vals;
  for (size_t v = 0; v < values_.size(); ++v)
    if (used[v]) {
      remap[v] = static_cast<int>(vals.size());
      vals.push_back(std::move(values_[v]));
    }
  values_ = std::move(vals);
  for (Node& n : nodes_) {
    for (int& v : n.inputs)
      if (v >= 0) v = remap[v];
    for (int& v : n.outputs) v = remap[v];
  }
  for (auto& o : outputs_) o.value = remap[o.value];
}

void Graph::toposort() {
  const auto prod = producers();
  const int n = static_cast<int>(nodes_.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> after(n);
  for (int i = 0; i < n; ++i) {
    std::set<int> deps;
    for (int v : nodes_[i].inputs)
      if (v >= 0 && prod[v] >= 0) deps.insert(prod[v]);
    waiting[i] = static_cast<int>(deps.size());
    for (int d : deps) after[d].push_back(i);
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // the earliest first: stable
  for (int i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<Node> sorted;
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    sorted.push_back(std::move(nodes_[i]));
    for (int j : after[i])
      if (--waiting[j] == 0) ready.push(j);
  }
  KILN_CHECK(static_cast<int>(sorted.size()) == n, "[graph] the graph has a cycle");
  nodes_ = std::move(sorted);
}

}  // namespace kiln
