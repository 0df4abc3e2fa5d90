// What an op is: its input slots, typed attributes, dtype and shape inference and checks. Each
// op is defined once, in its own file under graph/ops/, which registers it:
//
//   class SoftmaxOp : public OpDef { ... };
//   KILN_REGISTER_OPS(softmax) { registry.add(std::make_unique<SoftmaxOp>()); }
//
// (the macro's argument is the file's name; the build calls every graph/ops/<name>.cpp's
// function). Backends implement ops separately (backends/<backend>/ops/).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/attrs.h"
#include "graph/shape.h"
#include "kiln/tensor.h"

namespace kiln {

struct Node;

struct OpInput {
  std::string name;
  bool optional = false;  // absent inputs are -1 in Node::inputs
};

class OpDef {
 public:
  virtual ~OpDef() = default;
  virtual std::string name() const = 0;
  virtual std::vector<OpInput> inputs() const = 0;
  // The last input slot repeats (at least once): concat.
  virtual bool variadic() const { return false; }
  virtual std::vector<AttrSpec> attributes() const { return {}; }
  virtual int num_outputs(const Node& node) const { return 1; }
  // Checks attribute values beyond their types (ranges, combinations).
  virtual void check_attrs(const Node& node) const {}
  // Output dtypes from input dtypes (nullopt: an absent optional input); checks dtype rules.
  virtual std::vector<DType> infer_dtypes(const Node& node, const std::vector<std::optional<DType>>& in) const = 0;
  // Output shapes from input shapes; checks that the shapes fit the op and its attributes.
  virtual std::vector<Shape> infer_shapes(const Node& node, const std::vector<std::optional<Shape>>& in) const = 0;
  // The input slot whose memory output `output` is (a view such as reshape, or an in-place
  // update of a state), or -1.
  virtual int aliases_input(int output) const { return -1; }
  // Writes into the memory of the inputs its outputs alias (aliases_input) rather than viewing
  // it: a KV cache's keys and values updated by one node. Each such input must then be a state,
  // or the output of another in-place op on a state: nothing else may still read the old
  // contents (Graph::validate checks this).
  virtual bool in_place() const { return false; }
};

class OpRegistry {
 public:
  static OpRegistry& instance();  // every op of graph/ops/ registered
  void add(std::unique_ptr<OpDef> op);
  const OpDef* find(const std::string& name) const;
  const OpDef& get(const std::string& name) const;  // throws "[graph] unknown op 'x'"
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<OpDef>> ops_;
};

// Helpers for op definitions. `op` names the node in messages: "[op] node: ...".
void require_float(const std::optional<DType>& t, const Node& node, const char* input);
void require_integer(const std::optional<DType>& t, const Node& node, const char* input);
void require_same(const std::optional<DType>& a, const std::optional<DType>& b, const Node& node);
void require_rank(const std::optional<Shape>& s, size_t rank, const Node& node, const char* input);

}  // namespace kiln

#define KILN_REGISTER_OPS(file) void kiln_register_ops_##file(::kiln::OpRegistry& registry)
