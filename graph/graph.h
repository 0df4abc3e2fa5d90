// kiln's graph IR: typed values with N-d shapes (row-major; images NHWC) and a topologically
// ordered list of nodes, each an op of graph/ops/ with typed attributes. A graph has named
// inputs (shapes may name symbolic dims: "batch", "seq"), named outputs, constants (the
// bundle's tensors, by name) and states (tensors an engine keeps across runs, e.g. a KV cache).
// Families build graphs; rewrites (graph/rewrites/) transform them for a backend; engines run
// them; bundles store them as JSON and read them back as untrusted input.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/op.h"
#include "graph/shape.h"
#include "kiln/tensor.h"

namespace kiln {

enum class ValueKind : uint8_t { Activation, Input, Constant, State };

struct Value {
  ValueKind kind = ValueKind::Activation;
  DType dtype = DType::F32;
  // Inputs and states: their name. Constants: the tensor's name. Activations: optional, a tap
  // that tests and tools can read after a run ("blocks.3"); graph outputs are named too.
  std::string name;
  ShapeSpec shape;  // inputs, states, constants: as declared; activations: inferred per run
};

struct Node {
  std::string name;  // the checkpoint module path, e.g. "blocks.1.0.conv_pw"
  std::string op;
  std::vector<int> inputs;  // value ids; -1 where an optional input is absent
  std::vector<int> outputs;
  Attrs attrs;
  std::string group;  // layers reported together by profiles ("depthwise", "attention")
  // The backend an engine runs the node on ("cpu", "cuda"): set by engines, not stored in bundles.
  std::string device;
  const OpDef& def() const { return OpRegistry::instance().get(op); }
  int input(size_t slot) const { return slot < inputs.size() ? inputs[slot] : -1; }
};

// Bounds of a symbolic dim: runs with larger sizes are refused; `example` is the size graph
// validation infers shapes at. A size must be a multiple of `multiple` (an image network whose
// levels halve the input five times takes multiples of 32), so that the sizes a rewrite tries
// are ones the graph takes too.
struct SymbolSpec {
  int64_t example = 1;
  int64_t max = 1 << 20;
  int64_t multiple = 1;
};

struct GraphOutput {
  std::string name;
  int value = -1;
};

// The dtype and shape of a tensor in a bundle's tensor table, looked up by name.
struct ConstantInfo {
  DType dtype;
  Shape shape;
};
using ConstantInfoFn = std::function<std::optional<ConstantInfo>(const std::string&)>;

class Graph {
 public:
  // --- Building (families, tests). Each call checks what it can at once.
  int add_input(const std::string& name, DType dtype, ShapeSpec shape);
  // The value of a bundle tensor; adding the same tensor again returns the same value.
  int add_constant(const std::string& tensor, DType dtype, const Shape& shape);
  int add_state(const std::string& name, DType dtype, ShapeSpec shape);
  // Adds a node; its output values' dtypes come from the op's dtype inference.
  std::vector<int> add_node(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs = {},
                            const std::string& group = {});
  int add(const std::string& op, const std::string& name, std::vector<int> inputs, Attrs attrs = {},
          const std::string& group = {});
  void add_output(const std::string& name, int value);
  void set_symbol(const std::string& name, SymbolSpec spec) { symbols_[name] = spec; }
  void name_value(int value, const std::string& name) { values_.at(value).name = name; }

  // --- Reading.
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  const std::map<std::string, SymbolSpec>& symbols() const { return symbols_; }
  std::vector<int> inputs() const;  // value ids of kind Input, in order
  std::vector<int> states() const;
  std::optional<int> find_value(const std::string& name) const;  // a named activation, input or state
  std::optional<int> find_output(const std::string& name) const;

  // Every value's shape when the symbols have these sizes; throws "[op] node: ..." where a
  // node cannot take its inputs, or when a size is over its symbol's max.
  std::vector<Shape> infer_shapes(const Bindings& bindings) const;
  // Binds symbols from given shapes of inputs and states (a symbol seen twice must agree);
  // checks the fixed dims too.
  Bindings bind(const std::map<std::string, Shape>& shapes) const;
  // The same for values already found (each an input or a state): what an engine that looked its
  // inputs up once does on every call.
  Bindings bind(const std::vector<std::pair<int, const Shape*>>& values) const;
  Bindings example_bindings() const;

  nlohmann::json to_json() const;
  // Parses and validates untrusted JSON; constants must be in the tensor table with their shape.
  static Graph from_json(const nlohmann::json& j, const ConstantInfoFn& constants);
  // Structure (ids, order, op signatures, attributes, recorded dtypes) and shapes at the
  // symbols' examples.
  void validate() const;

  // --- Rewriting (graph/rewrites/): edit in place, then remove_nodes / toposort.
  Node& node(int i) { return nodes_.at(i); }
  Value& value(int v) { return values_.at(v); }
  int add_value(Value v);
  // Appends a node whose output values exist already (a rewrite's replacement).
  void append_node(Node node) { nodes_.push_back(std::move(node)); }
  void set_output_value(size_t output, int value) { outputs_.at(output).value = value; }
  // Drops the marked nodes, then every activation and constant nothing reads any more, and
  // renumbers values.
  void remove_nodes(const std::vector<bool>& dead);
  // Restores topological order after nodes were appended (stable otherwise).
  void toposort();
  std::vector<std::vector<int>> consumers() const;  // per value: node indices reading it
  std::vector<int> producers() const;               // per value: node index writing it, or -1
  // Recomputes a node's output dtypes (after a rewrite changed its inputs or attributes).
  void refresh_dtypes(int node);

 private:
  std::vector<DType> infer_node_dtypes(const Node& n) const;
  void check_node_signature(Node& n) const;

  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<GraphOutput> outputs_;
  std::map<std::string, SymbolSpec> symbols_;
};

}  // namespace kiln
